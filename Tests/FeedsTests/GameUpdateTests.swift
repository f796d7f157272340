import CloudCore
@testable import Feeds
import SportsDomain
import Testing

/// What a report writes of the broadcasts: the provider's list when it gives one, else the stored list stays.
@Suite struct GameUpdateTests {
    static let stored: Record = {
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_", deviceID: "_")
        let fields: [String: FieldValue] = [
            "status": FieldValue(type: .string, value: "scheduled"), "startTime": FieldValue(type: .timestamp, value: .int(1_791_159_600_000)),
            "localDate": FieldValue(type: .string, value: "2026-10-04"), "timeTBD": FieldValue(type: .int64, value: 0),
        ]
        return Record(recordName: "game_nfl_2026_401872978", recordType: "Game", changeSeq: 1, fields: fields, created: stamp, modified: stamp)
    }()

    static func report(provider: String, broadcasts: [String]?) -> ProviderGame {
        ProviderGame(
            provider: provider, league: "league_nfl", id: "401872978", startTime: 1_791_159_600_000, status: .live, period: 3, clock: "4:28",
            home: .init(names: ["Carolina Panthers"], score: 22), away: .init(names: ["Detroit Lions"], score: 19), broadcasts: broadcasts)
    }

    static func apply(_ report: ProviderGame, to record: Record) throws -> Record {
        let outcome = GameUpdate.apply(
            report, trust: .official, to: record, localDate: CivilDate("2026-10-04")!, sport: "american_football", now: 1, trustOf: { _ in .official }
        )
        guard case .changed(let fields, _) = outcome else { throw ProviderAnswerError("not changed: \(outcome)") }
        var updated = record
        updated.fields = fields
        return updated
    }

    @Test func broadcastsAreWrittenWhenListedAndKeptWhenNot() throws {
        let listed = try Self.apply(Self.report(provider: "espn", broadcasts: ["NBC", "Peacock", "NBC"]), to: Self.stored)
        #expect(listed.fields["broadcasts"] == FieldValue(type: .stringList, value: ["NBC", "Peacock"]))
        #expect(Game(recordName: listed.recordName, fields: listed.fields.merging(Self.gameIDs) { a, _ in a })?.broadcasts == ["NBC", "Peacock"])
        var unlisted = Self.report(provider: "espn", broadcasts: [])
        unlisted.clock = "2:00"
        #expect(try Self.apply(unlisted, to: listed).fields["broadcasts"] == listed.fields["broadcasts"])
    }

    /// What `Game(recordName:fields:)` needs beyond the feed's fields.
    static let gameIDs: [String: FieldValue] = [
        "league": FieldValue(type: .reference, value: ["recordName": "league_nfl"]), "season": FieldValue(type: .int64, value: 2026),
        "homeTeam": FieldValue(type: .reference, value: ["recordName": "team_nfl_panthers"]),
        "awayTeam": FieldValue(type: .reference, value: ["recordName": "team_nfl_lions"]),
        "stadium": FieldValue(type: .reference, value: ["recordName": "stadium_nfl_bank_of_america_stadium"]),
    ]
}
