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

        // Days later, without games anywhere near that day or the days beside it: venues, no matches.
        let idle = Self.catalog.match(latitude: 37.0, longitude: -122.0, time: GameTime.milliseconds("2025-06-10T20:00:00Z")!)
        #expect(idle.matches.isEmpty && idle.verdict == .manual)
        #expect(idle.venues.count == 2)
    }

    /// Lone Park, 55 km from the others: one evening game on 2025-06-10 and a doubleheader on 2025-06-20 whose second
    /// game follows the first (no start of its own: 19:00 local, timeTBD).
    static let lone = CanonicalCatalog(records: [
        Self.record("League", "league_mlb", ["sport": Self.string("baseball"), "abbreviation": Self.string("MLB")]),
        Self.record(
            "Stadium", "stadium_mlb_lone",
            [
                "name": Self.string("Lone Park"), "timeZone": Self.string("America/Los_Angeles"),
                "location": FieldValue(type: .location, value: ["latitude": 37.5, "longitude": -122.0]),
                "sports": FieldValue(type: .stringList, value: ["baseball"]),
            ]),
        Self.game("game_mlb_2025_10", start: "2025-06-11T02:05:00Z", day: "2025-06-10", home: "team_mlb_a", away: "team_mlb_b", at: "stadium_mlb_lone"),
        Self.game("game_mlb_2025_20", start: "2025-06-20T20:05:00Z", day: "2025-06-20", home: "team_mlb_a", away: "team_mlb_c", at: "stadium_mlb_lone"),
        Self.record(
            "Game", "game_mlb_2025_21",
            Self.game("x", start: "2025-06-21T02:00:00Z", day: "2025-06-20", home: "team_mlb_a", away: "team_mlb_c", at: "stadium_mlb_lone").fields
                .merging(["timeTBD": FieldValue(type: .int64, value: .int(1))]) { $1 }),
    ])

    /// Each row of the app's rules (spatial: high < 500 m, medium 500 m–2 km, low 2–5 km; temporal: same local day,
    /// adjacent day, out of range), a doubleheader and two venues within 2 km: the verdict of the answer and of its
    /// first pair.
    @Test func everyRowOfTheAppsMatchRulesGivesItsVerdict() throws {
        typealias Verdict = PhotoMatchRules.Verdict
        func verdicts(_ latitude: Double, _ time: String, _ catalog: CanonicalCatalog = Self.lone) -> (Verdict, Verdict?, [String]) {
            let found = catalog.match(latitude: latitude, longitude: -122.0, time: GameTime.milliseconds(time)!)
            return (found.verdict, found.matches.first?.verdict, found.matches.map(\.game.id))
        }
        let (lone, medium, low) = (37.5, 37.509, 37.527)
        // 18:00 local on the 10th at the venue, an hour before the game: the same day, high.
        #expect(verdicts(lone, "2025-06-11T01:00:00Z") == (.autoSelect, .autoSelect, ["game_mlb_2025_10"]))
        #expect(Self.lone.match(latitude: lone, longitude: -122.0, time: GameTime.milliseconds("2025-06-11T01:00:00Z")!).matches.first?.confidence == .exact)
        // The next morning and the day before (tailgating, time zones): adjacent, high.
        #expect(verdicts(lone, "2025-06-11T17:00:00Z") == (.confirm, .confirm, ["game_mlb_2025_10"]))
        #expect(verdicts(lone, "2025-06-09T20:00:00Z") == (.confirm, .confirm, ["game_mlb_2025_10"]))
        // 1 km away: medium, the same day or the next.
        #expect(verdicts(medium, "2025-06-11T01:00:00Z") == (.confirm, .confirm, ["game_mlb_2025_10"]))
        #expect(verdicts(medium, "2025-06-11T17:00:00Z") == (.confirm, .confirm, ["game_mlb_2025_10"]))
        // 3 km away: low, listed but entered by hand.
        #expect(verdicts(low, "2025-06-11T01:00:00Z") == (.manual, .manual, ["game_mlb_2025_10"]))
        // Two days after: out of range, nothing to propose.
        #expect(verdicts(lone, "2025-06-12T20:00:00Z") == (.manual, nil, []))

        // During the doubleheader's second game (16:30 local, still inside game 1's four hours): the person
        // chooses, and neither game is called exact.
        let doubleheader = Self.lone.match(latitude: lone, longitude: -122.0, time: GameTime.milliseconds("2025-06-20T23:30:00Z")!)
        #expect(doubleheader.verdict == .choose)
        #expect(Set(doubleheader.matches.map(\.game.id)) == ["game_mlb_2025_20", "game_mlb_2025_21"])
        #expect(doubleheader.matches.allSatisfy { $0.confidence == .likely && $0.verdict == .autoSelect })

        // At Near Park during its game while Far Park, 1.2 km away, had one that day: the person chooses; the next
        // day's game at Near Park (adjacent) does not compete with them.
        let twoVenues = Self.catalog.match(latitude: 37.0, longitude: -122.0, time: GameTime.milliseconds("2025-06-02T03:05:00Z")!)
        #expect(twoVenues.verdict == .choose)
        #expect(twoVenues.matches.map(\.game.id) == ["game_mlb_2025_1", "game_mlb_2025_2", "game_mlb_2025_3"])
        #expect(twoVenues.matches.map(\.day) == [.same, .same, .adjacent])
        // On the 2nd at Near Park only its own game is that day: auto-selected, the 1st's games stay listed below it.
        #expect(verdicts(37.0, "2025-06-02T21:00:00Z", Self.catalog) == (.autoSelect, .autoSelect, ["game_mlb_2025_3", "game_mlb_2025_1", "game_mlb_2025_2"]))
    }
}
