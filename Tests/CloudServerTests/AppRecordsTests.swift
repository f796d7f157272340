import Canon
import CloudCore
@testable import CloudSync
import Foundation
import StadiumCloudClient
import Testing

/// The SportsTime app's own records end to end, two devices of one account against a real server: visits with their
/// game, achievements both devices agree on, revocation, and what renames and relocations do (nothing).
@Suite struct AppRecordsTests {
    static let container = "iCloud.com.sportstime.test"

    @Test func aVisitWithItsGameSyncsWholeAndBothDevicesConvergeOnTheSameAchievements() async throws {
        try await ClientSyncTests.run { server, folder in
            var dataset = try CanonicalFixtures.dataset.get()
            _ = try await server.importer.run(dataset, container: Self.container, environment: "development", dryRun: false)
            let phone = try await ClientSyncTests.device(server, folder, "phone")
            let tablet = try await ClientSyncTests.device(server, folder, "tablet")

            // Logged on the phone before its first sync: no venue names yet; they are filled once canonical data arrives.
            let game = VisitDetails(
                sport: "baseball", homeTeamID: "team_mlb_giants", awayTeamID: "team_mlb_dodgers", homeTeamName: "San Francisco Giants",
                awayTeamName: "Los Angeles Dodgers", homeScore: 5, awayScore: 3, source: "manual", scoreSource: "manual",
                scoreResolutionPending: false, manualGameDescription: "Bonds' 700th weekend", seatSection: "VR 310")
            let sbc = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_121_040_000_000, details: game)  // 2005-07-11 00:00 UTC
            #expect(sbc.stadiumNameAtVisit == nil)
            try await phone.sync()
            try await tablet.sync()
            let onTablet = try #require(try tablet.visits().first)
            #expect(onTablet.stadiumNameAtVisit == "SBC Park", "the venue's name on its local day (July 10 in San Francisco)")
            #expect(onTablet.details == game, "every field of the visit arrived")

            // The person corrects the score; a later automatic fill does not overwrite it.
            try tablet.setDetails(VisitDetails(homeScore: 6), forVisit: sbc.recordName)
            try tablet.setDetails(VisitDetails(homeScore: 4, scoreSource: "canonical"), forVisit: sbc.recordName, by: .automatic)
            #expect(try tablet.visits().first?.details.homeScore == 6)
            #expect(try tablet.visits().first?.details.scoreSource == "canonical")
            #expect(try tablet.visits().first?.correctedFields == ["homeScore"])

            // Both devices log the rest of the NL West on their own, then sync: each computes the same badges.
            let west = [
                ("stadium_mlb_dodger_stadium", "2005-08-01"), ("stadium_mlb_petco_park", "2005-08-02"), ("stadium_mlb_coors_field", "2005-08-03"),
            ]
            try phone.addVisit(stadiumID: west[0].0, date: try CanonicalDate.milliseconds(west[0].1), details: VisitDetails(sport: "baseball"))
            try tablet.addVisit(stadiumID: west[1].0, date: try CanonicalDate.milliseconds(west[1].1), details: VisitDetails(sport: "baseball"))
            try tablet.addVisit(stadiumID: west[2].0, date: try CanonicalDate.milliseconds(west[2].1), details: VisitDetails(sport: "baseball"))
            for _ in 0..<2 {
                try await phone.sync()
                try await tablet.sync()
            }
            let chase = try await server.call(
                "records/query", ["query": ["recordType": "Achievement"]], as: server.alice
            ).records.compactMap { $0["recordName"]?.stringValue }.sorted()
            let phoneEarned = try phone.achievements().filter(\.isEarned).map(\.id)
            #expect(try tablet.achievements().filter(\.isEarned).map(\.id) == phoneEarned)
            #expect(Set(phoneEarned).isSuperset(of: ["achievement_first_visit"]))
            #expect(chase == Set(chase).sorted(), "one record per achievement")
            #expect(Set(chase) == Set(phoneEarned))

            // Arizona completes the NL West on 2005-08-04 (the 2005 Giants, Dodgers, Padres, Rockies and Diamondbacks).
            let arizona = try phone.addVisit(
                stadiumID: "stadium_mlb_chase_field", date: try CanonicalDate.milliseconds("2005-08-04"), details: VisitDetails(sport: "baseball"))
            try await phone.sync()
            try await tablet.sync()
            let nlWest = "achievement_mlb_nl_west_all_venues"
            #expect(try tablet.achievements().first { $0.id == nlWest }?.isEarned == true)
            #expect(try tablet.achievements().first { $0.id == nlWest }?.earnedAt == (try CanonicalDate.milliseconds("2005-08-04")))

            // A rename and a relocation change nothing: the badge was earned on its day.
            let oracle = dataset.stadiums.firstIndex { $0.id == "stadium_mlb_oracle_park" }!
            dataset.stadiums[oracle].name = "Bay Ballpark"
            dataset.stadiums[oracle].deprecatedAt = "2026-11-01"
            _ = try await server.importer.run(dataset, container: Self.container, environment: "development", dryRun: false)
            let report = try await tablet.sync()
            #expect(report.sent == 0, "no achievement changed")
            #expect(try tablet.achievements().first { $0.id == nlWest }?.isEarned == true)

            // Deleting the visit that completed it revokes it, on both devices.
            try tablet.deleteVisit(arizona.recordName)
            try await tablet.sync()
            try await phone.sync()
            for device in [phone, tablet] {
                let badge = try #require(try device.achievements().first { $0.id == nlWest })
                #expect(!badge.isEarned)
                #expect(badge.revokedAt != nil)
            }
        }
    }
}
