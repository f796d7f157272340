import Canon
import CloudCore
import Foundation
import SportsDomain
import Testing

/// The scoreboard card in `canonical/games` (abbreviation, logo, record, standing) and `canonical/standings`, on
/// real seasons imported into PostgreSQL, and a final score written by an import moving a record on the next request.
@Suite(.bounded) struct ScoreboardCardTests {
    static let dataset = Result {
        try CanonicalDataset.load(
            from: CanonicalFixtures.root.appendingPathComponent("Resources/canonical").path, gameSeasons: ["mlb_2025", "nwsl_2024"])
    }

    static func standings(_ server: TestServer, _ body: JSONValue) async throws -> JSONValue {
        let reply = try await server.call("canonical/standings", body, database: "public")
        #expect(reply.status == 200, "\(reply.json)")
        return reply.json
    }

    /// The Cubs' entry in their division's table of a standings answer.
    static func cubs(_ standings: JSONValue) -> JSONValue? {
        let divisions = standings["conferences"]?.arrayValue?.flatMap { $0["divisions"]?.arrayValue ?? [] } ?? []
        return divisions.first { $0["canonicalId"] == "division_mlb_nl_central" }?["teams"]?.arrayValue?.first {
            $0["canonicalId"] == "team_mlb_cubs"
        }
    }

    @Test func aGamesTeamsCarryTheirCardAndTheStandingsOfThatDayAgree() async throws {
        try await TestServer.runImported(try Self.dataset.get()) { server in
            let reply = try await server.call("canonical/games", ["date": "2025-06-15", "team": "team_mlb_cubs"], database: "public")
            #expect(reply.status == 200, "\(reply.json)")
            let game = try #require(reply.json["games"]?[0])
            let side = game["homeTeam"]?["canonicalId"] == "team_mlb_cubs" ? "homeTeam" : "awayTeam"
            let card = try #require(game[side])
            // The keys clients had stay as they were; the card's are beside them.
            #expect(card["canonicalId"] == "team_mlb_cubs" && card["name"] == "Chicago Cubs")
            #expect(card["abbreviation"] == "CHC" && card["logo"] == "logo_team_mlb_cubs")
            // Counted here from the dataset's file: the regular-season finals of the days before.
            let earlier = try Self.dataset.get().games["mlb_2025"]!.filter {
                $0.status == "final" && $0.localDate < "2025-06-15" && ($0.homeTeamId == "team_mlb_cubs" || $0.awayTeamId == "team_mlb_cubs")
            }
            let wins = earlier.filter { ($0.homeTeamId == "team_mlb_cubs") == ($0.homeScore! > $0.awayScore!) }.count
            let losses = earlier.count - wins
            #expect(card["record"] == .string("\(wins)-\(losses)"))

            let standings = try await Self.standings(server, ["league": "mlb", "date": "2025-06-15"])
            #expect(standings["league"] == "league_mlb" && standings["season"] == 2025 && standings["format"] == "W-L")
            let entry = try #require(Self.cubs(standings))
            #expect(entry["record"] == card["record"] && entry["wins"] == .int(Int64(wins)) && entry["abbreviation"] == "CHC")
            #expect(entry["rank"] == card["standing"]?["division"])
            let national = standings["conferences"]?.arrayValue?.first { $0["canonicalId"] == "conference_mlb_national_league" }
            #expect(national?["teams"]?.arrayValue?.first { $0["canonicalId"] == "team_mlb_cubs" }?["rank"] == card["standing"]?["conference"])
            #expect(standings["teams"]?.arrayValue?.count == 30)

            // The season alone, and any day of the winter after it: the final table.
            let final = try await Self.standings(server, ["league": "league_mlb", "season": 2025])
            #expect(final["teams"]?[0]?["canonicalId"] == "team_mlb_brewers" && final["teams"]?[0]?["record"] == "97-65")
            #expect(try await Self.standings(server, ["league": "mlb", "date": "2026-02-01"])["teams"] == final["teams"])

            // Soccer's one table: W-D-L and points.
            let nwsl = try await Self.standings(server, ["league": "nwsl", "season": 2024])
            #expect(nwsl["format"] == "W-D-L" && nwsl["conferences"] == [])
            #expect(nwsl["teams"]?[0]?["canonicalId"] == "team_nwsl_orlando_pride" && nwsl["teams"]?[0]?["record"] == "18-6-2")
            #expect(nwsl["teams"]?[0]?["points"] == 60 && nwsl["teams"]?[0]?["draws"] == 6)
        }
    }

    /// A game imported as scheduled, then as final: the next answer counts it, with no rebuild of anything.
    @Test func aFinalScoreMovesTheRecordOnTheNextRequest() async throws {
        var dataset = try Self.dataset.get()
        let index = try #require(
            dataset.games["mlb_2025"]!.firstIndex {
                $0.localDate == "2025-06-14" && ($0.homeTeamId == "team_mlb_cubs" || $0.awayTeamId == "team_mlb_cubs")
            })
        let played = dataset.games["mlb_2025"]![index]
        let cubsWon = (played.homeTeamId == "team_mlb_cubs") == (played.homeScore! > played.awayScore!)
        dataset.games["mlb_2025"]![index].status = "scheduled"
        (dataset.games["mlb_2025"]![index].homeScore, dataset.games["mlb_2025"]![index].awayScore) = (nil, nil)
        let scheduled = dataset
        try await TestServer.runImported(scheduled) { server in
            let before = try #require(Self.cubs(try await Self.standings(server, ["league": "mlb", "date": "2025-06-15"])))
            var final = scheduled
            final.games["mlb_2025"]![index] = played
            #expect(
                try await server.importer.run(final, container: CanonicalGamesTests.container, environment: "development", dryRun: false).changes
                    .count == 1)
            let after = try #require(Self.cubs(try await Self.standings(server, ["league": "mlb", "date": "2025-06-15"])))
            #expect(after["wins"]?.int64Value == before["wins"]!.int64Value! + (cubsWon ? 1 : 0))
            #expect(after["losses"]?.int64Value == before["losses"]!.int64Value! + (cubsWon ? 0 : 1))
            // The day itself does not count the game: a card shows the record coming into the day.
            #expect(Self.cubs(try await Self.standings(server, ["league": "mlb", "date": "2025-06-14"]))?["record"] == before["record"])
        }
    }

    @Test func badStandingsQuestionsGetAClearBadRequest() async throws {
        try await TestServer.runImported(try Self.dataset.get()) { server in
            let cases: [(JSONValue, String)] = [
                (["date": "2025-06-15"], "league is required"),
                (["league": "xfl", "date": "2025-06-15"], "unknown league xfl"),
                (["league": "mlb"], "date (YYYY-MM-DD) or season is required"),
                (["league": "mlb", "date": "2025-02-30"], "date must be a date"),
                (["league": "mlb", "season": "last"], "season must be a year"),
                (["league": "mlb", "date": "2015-06-01"], "no league_mlb season under way on 2015-06-01"),
                (["league": "nba", "season": 2025], "no games of league_nba's 2025 season"),
            ]
            for (body, reason) in cases {
                let reply = try await server.call("canonical/standings", body, database: "public")
                #expect(reply.status == 400 && reply.errorCode == "BAD_REQUEST", "\(body)")
                #expect(reply.json["reason"]?.stringValue?.contains(reason) == true, "\(body): \(reply.json)")
            }
        }
    }
}
