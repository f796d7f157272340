import Canon
import CloudCore
import CloudHTTP
import CloudPostgres
@testable import CloudSync
import Foundation
import SportsDomain
import StadiumCloudClient
import Synchronization
import Testing

/// The SportsTime app's own records end to end, two devices of one account against a real server: visits with their
/// game, achievements both devices agree on, revocation, and what renames and relocations do (nothing).
@Suite(.bounded) struct AppRecordsTests {
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

extension AppRecordsTests {
    /// The app's new fields, deployed as an additive change to a database that already holds visits written under the
    /// previous schema: old records stay as they were, new fields are accepted and typed, and a field removed is refused.
    @Test func theAppFieldsDeployAdditivelyOnAPopulatedDatabase() async throws {
        // Strict, as production is: a development write would add the fields itself (SchemaTests).
        try await TestServer.run(configure: { $0.justInTimeSchema = false }) { server in
            let records = server.dependencies.records
            let current = try CanonicalFixtures.schema.get()
            var previous = current
            let added = [
                "StadiumVisit": [
                    "sport", "game", "homeTeamName", "awayTeamName", "source", "scoreSource", "scoreResolutionPending", "manualGameDescription",
                    "correctedFields",
                ],
                "VisitPhoto": ["thumbnail", "orderIndex"],
            ]
            for (type, fields) in added { for field in fields { previous.recordTypes[type]?.fields[field] = nil } }
            previous.recordTypes["AchievementDefinition"] = nil
            try await records.applySchema(previous, to: TestServer.development, logger: TestDatabase.logger)
            let old = try await server.modify(
                (0..<50).map { Op.create("visit_\($0)", type: "StadiumVisit", ["notes": .string("before \($0)")]) })
            #expect(old.records.allSatisfy { $0["serverErrorCode"] == nil })
            let early = try await server.modify([Op.create("too_early", type: "StadiumVisit", ["sport": "baseball"])])
            #expect(early.anyErrorCode == "BAD_REQUEST", "not deployed yet")

            let changes = try await records.applySchema(current, to: TestServer.development, logger: TestDatabase.logger)
            #expect(changes.destructive.isEmpty)
            #expect(changes.additive.contains("field StadiumVisit.sport") && changes.additive.contains("record type AchievementDefinition"))
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "visit_7"]]], as: server.alice)
            #expect(lookup.records.first?["fields"] == ["notes": ["type": "STRING", "value": "before 7"]], "an old record is untouched")
            let tag = try #require(lookup.records.first?["recordChangeTag"]?.stringValue)
            let updated = try await server.modify([
                Op.typed(
                    "update", "visit_7", tag: tag,
                    fields: ["sport": ["value": "baseball"], "correctedFields": ["value": ["homeScore"]], "scoreResolutionPending": ["value": 1]])
            ])
            #expect(updated.records.first?["fields"]?["correctedFields"]?["type"] == "STRING_LIST", "\(updated.json)")
            #expect(updated.records.first?["fields"]?["notes"]?["value"] == "before 7")

            // Taking a field away again is destructive: refused, with the reason.
            await #expect(throws: CloudError.self) {
                try await records.applySchema(previous, to: TestServer.development, logger: TestDatabase.logger)
            }
        }
    }
}

extension AppRecordsTests {
    /// Bad input against the canonical data is refused per record with a reason, nothing of it written; the SDK
    /// shows it as a refused edit.
    @Test func visitsAndAchievementsThatContradictTheCanonicalDataAreRefusedAlone() async throws {
        try await ClientSyncTests.run { server, folder in
            let dataset = try CanonicalDataset.load(
                from: CanonicalFixtures.root.appendingPathComponent("Resources/canonical").path, gameSeasons: ["mlb_2025"])
            _ = try await server.importer.run(dataset, container: Self.container, environment: "development", dryRun: false)
            func visit(_ name: String, _ fields: [String: JSONValue]) -> JSONValue {
                var all: [String: JSONValue] = ["stadium": ["value": ["recordName": "stadium_mlb_oracle_park", "action": "NONE"]]]
                for (key, value) in fields { all[key] = ["value": value] }
                return ["operationType": "create", "record": ["recordName": .string(name), "recordType": "StadiumVisit", "fields": .object(all)]]
            }
            func achievement(_ name: String, id: String) -> JSONValue {
                [
                    "operationType": "create",
                    "record": ["recordName": .string(name), "recordType": "Achievement", "fields": ["achievementId": ["value": .string(id)]]],
                ]
            }
            let reply = try await server.modify([
                visit("good", ["sport": "baseball", "game": ["recordName": "game_mlb_2025_778444", "action": "NONE"]]),
                visit("hockey", ["sport": "ice_hockey"]),
                visit("elsewhere", ["game": ["recordName": "game_mlb_2025_778463", "action": "NONE"]]),
                achievement("achievement_first_visit", id: "achievement_first_visit"),
                achievement("achievement_made_up", id: "achievement_made_up"),
                achievement("achievement_mlb_5_venues", id: "achievement_first_visit"),
            ])
            #expect(reply.status == 200)
            #expect(
                reply.records.map { $0["serverErrorCode"]?.stringValue } == [nil, "BAD_REQUEST", "BAD_REQUEST", nil, "BAD_REQUEST", "BAD_REQUEST"])
            #expect(reply.records[1]["reason"]?.stringValue?.contains("never hosted ice_hockey") == true)
            #expect(reply.records[2]["reason"]?.stringValue?.contains("played at stadium_mlb_fenway_park") == true)
            #expect(reply.records[4]["reason"]?.stringValue?.contains("matches no achievement definition") == true)
            let stored = try await server.call(
                "records/lookup", ["records": [["recordName": "hockey"], ["recordName": "achievement_made_up"]]], as: server.alice)
            #expect(stored.records.map { $0["serverErrorCode"]?.stringValue } == ["NOT_FOUND", "NOT_FOUND"])

            // The SDK keeps the refused edit with its reason; the rest of the queue goes.
            let phone = try await ClientSyncTests.device(server, folder, "phone")
            try await phone.sync()
            try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_743_800_000_000, details: VisitDetails(sport: "basketball"))
            try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_743_800_000_000, details: VisitDetails(sport: "baseball"))
            let report = try await phone.sync()
            #expect(report.refused.count == 1)
            #expect(try phone.store.refusedEdits().first?.error.contains("never hosted basketball") == true)
        }
    }

    /// The server checks a badge as it checks visits, with the engine the SDK runs: the visits it cites are the
    /// account's own, and they earn it (a venue demolished later still counts); deleting a visit revokes what it
    /// earned on the server at once, so a device that syncs later agrees.
    @Test func aBadgeMustBeEarnedByTheAccountsOwnVisitsAndDeletingOneRevokesIt() async throws {
        try await ClientSyncTests.run { server, _ in
            _ = try await server.importer.run(try CanonicalFixtures.dataset.get(), container: Self.container, environment: "development", dryRun: false)
            func visit(_ name: String, _ stadium: String, _ day: String) -> JSONValue {
                let fields: [String: JSONValue] = [
                    "stadium": ["value": ["recordName": .string(stadium), "action": "NONE"]], "sport": ["value": "baseball"],
                    "visitDate": ["value": .int(try! CanonicalDate.milliseconds(day)), "type": "TIMESTAMP"],
                ]
                return ["operationType": "create", "record": ["recordName": .string(name), "recordType": "StadiumVisit", "fields": .object(fields)]]
            }
            func badge(_ name: String, visits: [String], earnedAt day: String = "2025-06-05", revokedAt: Int64? = nil) -> JSONValue {
                var fields: [String: JSONValue] = [
                    "achievementId": ["value": .string(name)], "earnedAt": ["value": .int(try! CanonicalDate.milliseconds(day)), "type": "TIMESTAMP"],
                    "visits": ["value": .array(visits.map { ["recordName": .string($0), "action": "NONE"] }), "type": "REFERENCE_LIST"],
                ]
                if let revokedAt { fields["revokedAt"] = ["value": .int(revokedAt), "type": "TIMESTAMP"] }
                return ["operationType": "create", "record": ["recordName": .string(name), "recordType": "Achievement", "fields": .object(fields)]]
            }
            try await server.modify([visit("bobs_visit", "stadium_mlb_oracle_park", "2025-06-01")], as: server.bob)

            // Five MLB parks, the first the Oakland Coliseum in 2023 (demolished since), saved with the badge they earn.
            let five = [
                ("coliseum", "stadium_mlb_oakland_coliseum", "2023-06-01"), ("oracle", "stadium_mlb_oracle_park", "2025-06-01"),
                ("dodger", "stadium_mlb_dodger_stadium", "2025-06-02"), ("petco", "stadium_mlb_petco_park", "2025-06-03"),
                ("wrigley", "stadium_mlb_wrigley_field", "2025-06-05"),
            ]
            let earned = try await server.modify(five.map { visit($0.0, $0.1, $0.2) } + [badge("achievement_mlb_5_venues", visits: five.map(\.0))])
            #expect(earned.status == 200 && earned.anyErrorCode == nil, "\(earned.json)")

            let refused = try await server.modify([
                badge("achievement_mlb_all_venues", visits: five.map(\.0)), badge("achievement_first_visit", visits: ["bobs_visit"]),
            ])
            #expect(refused.records.map { $0["serverErrorCode"]?.stringValue } == ["BAD_REQUEST", "BAD_REQUEST"])
            #expect(refused.records[0]["reason"]?.stringValue?.contains("is not earned by this account's 5 visit(s)") == true)
            #expect(refused.records[1]["reason"]?.stringValue?.contains("cites visit bobs_visit, which is not a visit of this account") == true)
            // Revoked, or without earnedAt, a badge claims nothing and is accepted.
            #expect(try await server.modify([badge("achievement_mlb_all_venues", visits: [], revokedAt: 1_750_000_000_000)]).anyErrorCode == nil)

            // Wrigley deleted: four parks no longer earn five; the server revokes the badge itself.
            let deleted = try await server.modify([["operationType": "forceDelete", "record": ["recordName": "wrigley"]]])
            #expect(deleted.anyErrorCode == nil)
            let stored = try await server.call("records/lookup", ["records": [["recordName": "achievement_mlb_5_venues"]]], as: server.alice)
            #expect(stored.records.first?["fields"]?["revokedAt"]?["value"]?.int64Value != nil, "\(stored.json)")
        }
    }
}

extension AppRecordsTests {
    /// The gallery on a second device: thumbnails, order, capture time and place, before any full-size download; an
    /// upload cut on the first device finishes at its next sync without `addPhoto` again; a deleted photo goes.
    @Test func theGalleryShowsThumbnailsOnTheSecondDeviceBeforeAnyFullSizeDownload() async throws {
        try await ClientSyncTests.run { server, folder in
            var configuration = SyncConfiguration()
            configuration.chunkSize = 64 * 1024
            let network = FlakyTransport()
            func file(_ name: String, _ size: Int, _ seed: Int) throws -> URL {
                let url = URL(fileURLWithPath: "\(folder)/\(name)")
                try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 * seed % 251) }).write(to: url)
                return url
            }
            let phone = try await ClientSyncTests.device(server, folder, "phone", transport: network, configuration: configuration)
            let visit = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_717_243_200_000).recordName
            let first = try await phone.addPhoto(
                try file("a.jpg", 300_000, 7), toVisit: visit, caption: "first pitch", thumbnail: try file("a-thumb.jpg", 3_000, 3),
                captureDate: 1_717_245_000_000, location: (37.7786, -122.3893))
            #expect(first.orderIndex == 0 && first.isUploaded)

            // The second photo's upload is cut; it stays pending and the next sync finishes it.
            network.state.withLock { $0.cutAfter["/assets/upload/"] = 3 }
            await #expect(throws: SyncError.self) {
                try await phone.addPhoto(
                    try file("b.jpg", 400_000, 5), toVisit: visit, caption: "seventh inning", thumbnail: try file("b-thumb.jpg", 2_000, 9))
            }
            #expect(try phone.photos(ofVisit: visit).map(\.isUploaded) == [true, false])
            network.state.withLock {
                $0.offline = false; $0.cutAfter = [:]
            }
            try await phone.sync()
            #expect(try phone.photos(ofVisit: visit).map(\.isUploaded) == [true, true])
            let second = try #require(try phone.photos(ofVisit: visit).last)
            try phone.reorderPhotos([second.recordName], ofVisit: visit)
            try await phone.sync()

            let tablet = try await ClientSyncTests.device(server, folder, "tablet", configuration: configuration)
            try await tablet.sync()
            let gallery = try tablet.photos(ofVisit: visit)
            #expect(gallery.map(\.caption) == ["seventh inning", "first pitch"], "the person's order")
            #expect(gallery.allSatisfy { $0.thumbnailSize != nil && $0.size != nil })
            #expect(gallery.last?.captureDate == 1_717_245_000_000 && gallery.last?.latitude == 37.7786)
            let thumb = URL(fileURLWithPath: folder + "/shown.jpg")
            network.state.withLock { $0.sent = [] }
            try await tablet.downloadThumbnail(first.recordName, to: thumb)
            #expect(try Data(contentsOf: thumb).count == 3_000, "the thumbnail, not the photo")

            try tablet.deletePhoto(first.recordName)
            try await tablet.sync()
            try await phone.sync()
            #expect(try phone.photos(ofVisit: visit).map(\.caption) == ["seventh inning"])
        }
    }
}

extension AppRecordsTests {
    /// The SDK's typed readers answer offline from the synced canonical data, with the server's identity rules.
    @Test func typedReadersSearchAndProgressWorkOffline() async throws {
        try await ClientSyncTests.run { server, folder in
            _ = try await server.importer.run(
                try CanonicalFixtures.dataset.get(), container: Self.container, environment: "development", dryRun: false)
            let phone = try await ClientSyncTests.device(server, folder, "phone")
            try await phone.sync()
            #expect(try phone.leagues().map(\.abbreviation).sorted() == ["MLB", "MLS", "NBA", "NFL", "NHL", "NWSL", "WNBA"])
            #expect(try phone.conferences(inLeague: "league_mlb").map(\.name) == ["American League", "National League"])
            #expect(try phone.divisions(inLeague: "league_mlb").count == 6)
            #expect(try phone.teams(inLeague: "league_mlb", division: "division_mlb_nl_west").count == 5)
            let current = try phone.venues()
            let all = try phone.venues(includingDeprecated: true)
            #expect(!current.contains { $0.isDeprecated } && all.contains { $0.id == "stadium_mlb_oakland_coliseum" })

            // Offline: the server is not asked.
            #expect(try phone.resolve("sbc park").map(\.canonicalId) == ["stadium_mlb_oracle_park"])
            #expect(
                try phone.resolve("OAK", on: try CanonicalDate.milliseconds("2019-06-01")).map(\.canonicalId) == [
                    "team_mlb_athletics", "team_nfl_raiders",
                ])
            #expect(try phone.nearby(latitude: 37.7786, longitude: -122.3893, sport: "baseball").first?.canonicalId == "stadium_mlb_oracle_park")

            let moved = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: try CanonicalDate.milliseconds("2020-06-01"))
            #expect(moved.stadiumNameAtVisit == "Oracle Park")
            try phone.setDate(try CanonicalDate.milliseconds("2005-06-01"), type: "tour", forVisit: moved.recordName)
            #expect(try phone.visits().first { $0.recordName == moved.recordName }?.stadiumNameAtVisit == "SBC Park", "the name follows the day")
            try phone.addVisit(stadiumID: "stadium_mlb_petco_park", date: try CanonicalDate.milliseconds("2024-06-01"))
            let west = try phone.progress(league: "league_mlb", division: "division_mlb_nl_west")
            #expect(west.visited == ["stadium_mlb_oracle_park", "stadium_mlb_petco_park"])
            #expect(west.total == 5)
        }
    }
}

extension AppRecordsTests {
    /// An old install's per-venue ids (the seed's `stadiumUUIDs`, declared in `manual.LEGACY_STADIUM_IDS`) and the
    /// canonical UUIDs resolve to canonical ids, on the server and offline, so visits migrate with no loss.
    @Test func legacyStadiumIDsResolveToCanonicalIDs() async throws {
        try await ClientSyncTests.run { server, folder in
            var dataset = try CanonicalFixtures.dataset.get()
            let sample = ["oracle": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "fenway": "A3BB189E-8BF9-3888-9912-ACE4E6543002"]
            for (id, legacy) in [("stadium_mlb_oracle_park", sample["oracle"]!), ("stadium_mlb_fenway_park", sample["fenway"]!)] {
                dataset.stadiums[dataset.stadiums.firstIndex { $0.id == id }!].legacyIds = [legacy]
            }
            _ = try await server.importer.run(dataset, container: Self.container, environment: "development", dryRun: false)
            let answer = try await server.call("canonical/resolve", ["name": .string(sample["oracle"]!.lowercased())], database: "public")
            #expect(answer.json["results"]?[0]?["canonicalId"] == "stadium_mlb_oracle_park")

            let phone = try await ClientSyncTests.device(server, folder, "phone")
            try await phone.sync()
            #expect(try phone.canonicalStadiumID(forLegacyID: sample["fenway"]!) == "stadium_mlb_fenway_park")
            let uuid = CanonicalID.uuid(for: "stadium_mlb_petco_park").uuidString
            #expect(try phone.canonicalStadiumID(forLegacyID: uuid) == "stadium_mlb_petco_park")
            #expect(try phone.canonicalStadiumID(forLegacyID: "00000000-0000-0000-0000-000000000000") == nil)
        }
    }
}
