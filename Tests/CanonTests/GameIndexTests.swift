import Canon
import CloudCore
import Foundation
import SportsDomain
import Testing

/// Local days, start times, the game index and the match rules, on records made here.
@Suite struct GameIndexTests {
    @Test func civilDatesRoundTripAndRefuseDaysThatDoNotExist() {
        for days in [-300_000, -1, 0, 1, 11_016, 20_000, 2_932_896] {
            let date = CivilDate(daysSince1970: days)
            #expect(date.daysSince1970 == days)
            #expect(CivilDate(date.description) == date)
        }
        #expect(CivilDate("2024-02-29") != nil)
        #expect(CivilDate("2025-02-29") == nil)
        #expect(CivilDate("2025-2-01") == nil)
        #expect(CivilDate("2025-03-18")!.adding(days: 14).description == "2025-04-01")
        #expect(GameTime.milliseconds("1970-01-01T00:00:00Z") == 0)
        #expect(GameTime.milliseconds("2025-03-18T10:10:00Z") == 1_742_292_600_000)
        for bad in ["2025-03-18 10:10:00Z", "2025-03-18T24:00:00Z", "2025-02-30T10:00:00Z", "2025-03-18T10:10:00", ""] {
            #expect(GameTime.milliseconds(bad) == nil, "\(bad)")
        }
    }

    static func record(_ type: String, _ name: String, _ fields: [String: FieldValue]) -> Record {
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_", deviceID: "_")
        return Record(recordName: name, recordType: type, changeSeq: 1, fields: fields, created: stamp, modified: stamp)
    }

    static func string(_ text: String) -> FieldValue { FieldValue(type: .string, value: .string(text)) }
    static func reference(_ name: String) -> FieldValue { FieldValue(type: .reference, value: ["recordName": .string(name)]) }
    static func int(_ value: Int64) -> FieldValue { FieldValue(type: .int64, value: .int(value)) }

    static func game(_ id: String, start: String, day: String, home: String, away: String, at stadium: String) -> Record {
        Self.record(
            "Game", id,
            [
                "league": Self.reference("league_mlb"), "season": Self.int(2025),
                "startTime": FieldValue(type: .timestamp, value: .int(GameTime.milliseconds(start)!)),
                "localDate": Self.string(day), "homeTeam": Self.reference(home), "awayTeam": Self.reference(away), "stadium": Self.reference(stadium),
                "status": Self.string("final"),
            ])
    }

    /// Two ballparks 1.2 km apart in one city (one Pacific, for local days), three teams, four games.
    static let catalog = CanonicalCatalog(records: [
        Self.record("League", "league_mlb", ["sport": Self.string("baseball"), "abbreviation": Self.string("MLB")]),
        Self.record(
            "Stadium", "stadium_mlb_near",
            [
                "name": Self.string("Near Park"), "timeZone": Self.string("America/Los_Angeles"),
                "location": FieldValue(type: .location, value: ["latitude": 37.0, "longitude": -122.0]),
                "sports": FieldValue(type: .stringList, value: ["baseball"]),
            ]),
        Self.record(
            "Stadium", "stadium_mlb_far",
            [
                "name": Self.string("Far Park"), "timeZone": Self.string("America/Los_Angeles"),
                "location": FieldValue(type: .location, value: ["latitude": 37.011, "longitude": -122.0]),
                "sports": FieldValue(type: .stringList, value: ["baseball"]),
            ]),
        Self.record("Team", "team_mlb_a", ["name": Self.string("A")]),
        Self.record("Team", "team_mlb_b", ["name": Self.string("B")]),
        Self.record("Team", "team_mlb_c", ["name": Self.string("C")]),
        // 19:05 Pacific on 2025-06-01 is 02:05Z on 2025-06-02: the local day is the 1st.
        Self.game(
            "game_mlb_2025_1", start: "2025-06-02T02:05:00Z", day: "2025-06-01", home: "team_mlb_a", away: "team_mlb_b", at: "stadium_mlb_near"),
        Self.game("game_mlb_2025_2", start: "2025-06-01T20:10:00Z", day: "2025-06-01", home: "team_mlb_c", away: "team_mlb_b", at: "stadium_mlb_far"),
        Self.game(
            "game_mlb_2025_3", start: "2025-06-02T20:10:00Z", day: "2025-06-02", home: "team_mlb_a", away: "team_mlb_c", at: "stadium_mlb_near"),
        Self.game("game_mlb_2025_4", start: "2025-06-05T02:05:00Z", day: "2025-06-04", home: "team_mlb_c", away: "team_mlb_a", at: "stadium_mlb_far"),
    ])

    @Test func theIndexAnswersByLocalDayTeamVenueAndSeason() throws {
        let games = Self.catalog.games
        let june1 = CivilDate("2025-06-01")!
        #expect(games.games(on: june1...june1).map(\.id) == ["game_mlb_2025_2", "game_mlb_2025_1"])
        #expect(
            games.games(on: june1...june1.adding(days: 9), .init(team: "team_mlb_a")).map(\.id) == [
                "game_mlb_2025_1", "game_mlb_2025_3", "game_mlb_2025_4",
            ])
        #expect(games.games(on: june1...june1.adding(days: 9), .init(venue: "stadium_mlb_far")).count == 2)
        #expect(games.games(on: june1...june1.adding(days: 9), .init(leagues: ["league_nba"])).isEmpty)
        #expect(
            games.dates(in: june1...june1.adding(days: 9), .init(team: "team_mlb_c")).map { "\($0.date):\($0.games)" } == [
                "2025-06-01:1", "2025-06-02:1", "2025-06-04:1",
            ])
        #expect(games.span(league: "league_mlb", season: 2025) == june1...CivilDate("2025-06-04")!)
        #expect(Self.catalog.league("MLB") == "league_mlb" && Self.catalog.league("mlb") == "league_mlb" && Self.catalog.league("xfl") == nil)
        #expect(Self.catalog.localDate(of: GameTime.milliseconds("2025-06-02T02:05:00Z")!, at: "stadium_mlb_near") == june1)
    }

    @Test func aMatchIsExactAtTheVenueDuringTheGameAndWeakerOtherwise() throws {
        // At Near Park an hour after the evening game's first pitch (past midnight UTC, still the 1st locally).
        let during = Self.catalog.match(latitude: 37.0, longitude: -122.0, time: GameTime.milliseconds("2025-06-02T03:05:00Z")!)
        #expect(during.matches.first?.game.id == "game_mlb_2025_1")
        #expect(during.matches.first?.confidence == .exact)
        #expect(during.matches.first?.minutesFromStart == 60)
        // Far Park's afternoon game that day is 1.2 km away and long over: possible at most.
        #expect(during.matches.first { $0.game.id == "game_mlb_2025_2" }?.confidence == .possible)
        #expect(during.venues.map(\.canonicalId) == ["stadium_mlb_near", "stadium_mlb_far"])

        // The morning of the 1st at Near Park: its game is that local day but hours away, so likely.
        let morning = Self.catalog.match(latitude: 37.0, longitude: -122.0, time: GameTime.milliseconds("2025-06-01T16:00:00Z")!)
        #expect(morning.matches.first?.game.id == "game_mlb_2025_1")
        #expect(morning.matches.first?.confidence == .likely)

        // A day without games anywhere near: venues, no matches.
        let idle = Self.catalog.match(latitude: 37.0, longitude: -122.0, time: GameTime.milliseconds("2025-06-03T20:00:00Z")!)
        #expect(idle.matches.isEmpty)
        #expect(idle.venues.count == 2)
    }
}
