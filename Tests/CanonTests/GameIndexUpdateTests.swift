import Canon
import CloudCore
import SportsDomain
import Testing

/// The game index follows a live day in memory: a new score replaces the game where it is, a move re-sorts.
@Suite struct GameIndexUpdateTests {
    static func game(_ id: String, start: String, day: String, status: String = "scheduled", home: Int? = nil) -> Record {
        var fields: [String: FieldValue] = [
            "league": .reference("league_nba"), "season": .int(2026), "startTime": FieldValue(type: .timestamp, value: .int(GameTime.milliseconds(start)!)),
            "localDate": .string(day), "homeTeam": .reference("team_nba_celtics"), "awayTeam": .reference("team_nba_knicks"),
            "stadium": .reference("stadium_nba_td_garden"), "status": .string(status), "sourceGameId": .string(id),
        ]
        if let home { (fields["homeScore"], fields["awayScore"]) = (.int(home), .int(0)) }
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_canonicalImport", deviceID: "test")
        return Record(recordName: id, recordType: "Game", changeSeq: 1, fields: fields, created: stamp, modified: stamp)
    }

    @Test func aScoreReplacesTheGameInPlaceAndAMoveResortsLikeARebuild() throws {
        let records = [
            Self.game("a", start: "2026-12-01T00:30:00Z", day: "2026-11-30"), Self.game("b", start: "2026-12-02T00:30:00Z", day: "2026-12-01"),
            Self.game("c", start: "2026-12-03T00:30:00Z", day: "2026-12-02"),
        ]
        let index = GameIndex(records: records)
        let live = index.updating(with: [Self.game("a", start: "2026-12-01T00:30:00Z", day: "2026-11-30", status: "live", home: 3)])
        #expect(live.games.map(\.id) == ["a", "b", "c"])
        #expect(live.game("a")?.status == "live" && live.game("a")?.homeScore == 3)
        #expect(live.games(on: CivilDate("2026-11-30")!...CivilDate("2026-11-30")!).map(\.status) == ["live"])
        #expect(live.game(league: "league_nba", provider: "espn", id: "a")?.status == "live")

        // b's score, then a postponed to after c: sorted, found on its new day and no longer on its old one, as a
        // rebuild would, with b's score kept through the new sort.
        let scored = Self.game("b", start: "2026-12-02T00:30:00Z", day: "2026-12-01", status: "live", home: 7)
        let moved = [Self.game("a", start: "2026-12-04T00:30:00Z", day: "2026-12-03", status: "scheduled")]
        let updated = live.updating(with: [scored]).updating(with: moved)
        let rebuilt = GameIndex(records: [scored, records[2]] + moved)
        #expect(live.game("b")?.homeScore == nil, "an update leaves the index it was made from as it was")
        #expect(updated.game("b")?.homeScore == 7)
        #expect(updated.games == rebuilt.games && updated.games.map(\.id) == ["b", "c", "a"])
        #expect(updated.games(on: CivilDate("2026-11-30")!...CivilDate("2026-11-30")!).isEmpty)
        #expect(updated.games(on: CivilDate("2026-12-03")!...CivilDate("2026-12-03")!).map(\.id) == ["a"])
    }
}
