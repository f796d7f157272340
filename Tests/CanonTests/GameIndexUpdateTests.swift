import Canon
import CloudCore
import SportsDomain
import Testing

/// The game index follows a live day in memory: a new score replaces the game where it is, a move re-sorts.
@Suite struct GameIndexUpdateTests {
    static func game(_ id: String, start: String, day: String, status: String = "scheduled", home: Int? = nil) -> Record {
        var fields: [String: FieldValue] = [
            "league": .reference("league_nba"), "season": .int(2026),
            "startTime": FieldValue(type: .timestamp, value: .int(GameTime.milliseconds(start)!)),
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

    /// Any sequence of changes (scores, moves, new provider ids, new and dropped games, in several league-seasons)
    /// leaves the index answering every question as one built from the final records does.
    @Test func updatesInSeveralSeasonsAnswerAsARebuildDoes() throws {
        func game(_ id: String, league: String, season: Int, day: Int, hour: Int, home: String, status: String = "scheduled", feedIDs: [String] = [])
            -> Record
        {
            func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            var record = Self.game(id, start: "2026-12-\(two(day))T\(two(hour)):30:00Z", day: "2026-12-\(two(day))", status: status)
            record.fields["league"] = .reference(league)
            record.fields["season"] = .int(season)
            record.fields["homeTeam"] = .reference(home)
            if !feedIDs.isEmpty { record.fields["feedIds"] = FieldValue(type: .stringList, value: .array(feedIDs.map { .string($0) })) }
            return record
        }
        var generator = SystemRandomNumberGenerator()
        let leagues = [("league_nba", 2026), ("league_nhl", 2026), ("league_nba", 2025)]
        let teams = ["team_nba_celtics", "team_nhl_bruins", "team_nba_lakers"]
        var current: [String: Record] = [:]
        for n in 0..<60 {
            let (league, season) = leagues[n % 3]
            current["g\(n)"] = game("g\(n)", league: league, season: season, day: 1 + n % 20, hour: n % 24, home: teams[n % 3])
        }
        var index = GameIndex(records: Array(current.values))
        for step in 0..<200 {
            var batch: [Record] = []
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let id = "g\(Int.random(in: 0..<70, using: &generator))"
                let (league, season) = leagues.randomElement(using: &generator)!
                var record = current[id] ?? game(id, league: league, season: season, day: 5, hour: 1, home: teams[0])
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: record.fields["status"] = .string("live")
                case 1:  // to another day, in the same month or the next
                    let day = step % 2 == 0 ? "2026-12-\(10 + step % 9)" : "2027-01-0\(1 + step % 9)"
                    record.fields["startTime"] = FieldValue(type: .timestamp, value: .int(GameTime.milliseconds(day + "T01:00:00Z")!))
                    record.fields["localDate"] = .string(day)
                case 2: record.fields["feedIds"] = FieldValue(type: .stringList, value: .array([.string("espn:\(step)")]))
                case 3: record.deleted = true
                default: record.deleted = false
                }
                current[id] = record
                batch.append(record)
            }
            index = index.updating(with: batch)
        }
        let rebuilt = GameIndex(records: Array(current.values))
        let december = CivilDate("2026-12-01")!...CivilDate("2027-01-31")!
        #expect(index.games == rebuilt.games)
        for team in teams { #expect(index.games(on: december, .init(team: team)) == rebuilt.games(on: december, .init(team: team))) }
        for (league, season) in leagues {
            #expect(index.games(on: december, .init(leagues: [league])) == rebuilt.games(on: december, .init(leagues: [league])))
            #expect(index.span(league: league, season: season) == rebuilt.span(league: league, season: season))
        }
        for id in (0..<70).map({ "g\($0)" }) {
            #expect(index.game(id) == rebuilt.game(id))
            let league = current[id].flatMap { $0.fields["league"]?.value["recordName"]?.stringValue } ?? "league_nba"
            #expect(index.game(league: league, provider: "espn", id: id) == rebuilt.game(league: league, provider: "espn", id: id))
        }
    }
}
