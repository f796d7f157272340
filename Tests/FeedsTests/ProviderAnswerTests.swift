import CloudCore
import Feeds
import Foundation
import SportsDomain
import Testing

/// The provider adapters read the providers' real answers (`../shared/data/raw/games`, README there): every state
/// they show, and nothing they do not.
@Suite struct ProviderAnswerTests {
    static let games = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/data/raw/games")

    static func answer(_ path: String) throws -> [UInt8] {
        let url = Self.games.appendingPathComponent(path)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ProviderAnswerError("missing recorded answer \(url.path): ../shared must be beside the repository")
        }
        if path.hasSuffix(".py") {
            // A JSON answer inside a Python string ('''…''').
            let text = String(decoding: data, as: UTF8.self)
            let start = try #require(text.range(of: "'''"))
            let end = try #require(text.range(of: "'''", range: start.upperBound..<text.endIndex))
            return Array(text[start.upperBound..<end.lowerBound].utf8)
        }
        return Array(data)
    }

    static let espn = "phillipbritain__ScoreMap/server/tests/ScoreMap.Server.Tests/Fixtures/Espn/"

    @Test func espnReadsAGameInTheThirdQuarterFinalsAndAScheduledGame() throws {
        let (games, skipped) = try ESPNScoreboard().parse(try Self.answer(Self.espn + "nfl.json"), league: "league_nfl")
        #expect(skipped.isEmpty)
        #expect(games.count == 4)
        let live = try #require(games.first { $0.id == "401872978" })
        #expect(live.status == .live && live.period == 3 && live.clock == "4:28")
        #expect(live.home.names.first == "Carolina Panthers" && live.home.score == 22 && live.away.score == 19)
        #expect(live.startTime == 1_791_159_600_000)  // 2026-10-05T00:20Z
        let london = try #require(games.first { $0.id == "401872965" })
        #expect(london.status == .final && london.home.score == 13 && london.away.score == 30 && london.venue == "Tottenham Hotspur Stadium")
        #expect(london.clock == nil && london.detail == "Final")
        let scheduled = try #require(games.first { $0.id == "401872979" })
        #expect(scheduled.status == .scheduled && scheduled.home.score == nil && scheduled.period == nil)
        #expect(live.broadcasts == ["NBC"] && scheduled.broadcasts == ["ESPN"])
    }

    @Test func espnReadsAPostponementAnInningAndLeavesPreseasonOut() throws {
        let postponed = try ESPNScoreboard().parse(try Self.answer(Self.espn + "mlb-postponed.json"), league: "league_mlb").games
        #expect(postponed.map(\.status) == [.postponed])
        #expect(postponed.first?.home.score == nil)
        let mlb = try ESPNScoreboard().parse(try Self.answer(Self.espn + "mlb.json"), league: "league_mlb").games
        let inning = try #require(mlb.first { $0.status == .live })
        #expect(inning.period == 7 && inning.detail == "Top 7th" && inning.gameType == "playoff")
        let nhl = try ESPNScoreboard().parse(try Self.answer(Self.espn + "nhl.json"), league: "league_nhl").games
        #expect(nhl.first { $0.status == .live }?.clock == "6:35")
        #expect(nhl.first?.season == 2026)  // ESPN's 2027 is the 2026-27 season
        // National first, then the teams' markets, each name once.
        #expect(nhl.first { $0.id == "401891778" }?.broadcasts == ["ESPN+", "Scripps Sports", "KCOP", "Prime Video (Local)"])
        // The NBA answer holds one preseason game: not a canonical game.
        #expect(try ESPNScoreboard().parse(try Self.answer(Self.espn + "nba.json"), league: "league_nba").games.isEmpty)
        let mls = try ESPNScoreboard().parse(try Self.answer(Self.espn + "soccer-mls-scheduled.json"), league: "league_mls").games
        #expect(mls.map(\.status) == [.scheduled] && mls.first?.clock == nil)
    }

    @Test func mlbStatsAPIReadsFinalsAndPostponementsByTheirCode() throws {
        let path = "zero-sum-seattle__python-mlb-statsapi/tests/mock_tests/mock_json/schedule/"
        let (games, skipped) = try MLBStatsAPI().parse(try Self.answer(path + "schedule_date.json"), league: "league_mlb")
        #expect(skipped.isEmpty)
        #expect(games.count == 9)
        #expect(games.filter { $0.status == .final }.count == 7)
        // A postponed game says abstractGameState Final: the code (D) decides.
        let postponed = games.filter { $0.status == .postponed }
        #expect(Set(postponed.map(\.id)) == ["661333", "661750"])
        #expect(postponed.allSatisfy { $0.home.score == nil })
        let cubs = try #require(games.first { $0.id == "663178" })
        #expect(cubs.home.names == ["Chicago Cubs"] && cubs.home.score == 5 && cubs.away.score == 4 && cubs.venue == "Wrigley Field")
        #expect(cubs.season == 2022 && cubs.gameNumber == 1)
        // The recorded division series answer was trimmed by its project: games without teams are skipped, not guessed.
        let series = try MLBStatsAPI().parse(try Self.answer(path + "schedule_start_end_date.json"), league: "league_mlb")
        #expect(series.games.count + series.skipped.count == 8 && series.games.count >= 2)
        #expect(series.games.allSatisfy { $0.gameType == "playoff" })
    }

    @Test func nhlWebAPIReadsOvertimeShootoutAndAWeekOfSchedule() throws {
        let scores = try NHLWebAPI().parse(try Self.answer("kas21__nhl-scoreboard/tests/fixtures/nhl/score_2026-04-11.json"), league: "league_nhl")
            .games
        #expect(scores.count == 15 && scores.allSatisfy { $0.status == .final })
        #expect(scores.filter { $0.detail == "Final/OT" }.count == 1)
        #expect(scores.filter { $0.detail == "Final/SO" }.count == 1)
        #expect(scores.first?.season == 2025)
        #expect(scores.first { $0.id == "2025021261" }?.home.names.contains("Bruins") == true)
        let week = try NHLWebAPI().parse(
            try Self.answer("austinegri__NhlGamesTodayLambda/test/responseData/scheduleResponseWithGames.py"), league: "league_nhl"
        ).games
        #expect(week.count == 54 && week.allSatisfy { $0.status == .scheduled && $0.home.score == nil })
        #expect(week.first?.home.names.contains("Chicago") == true && week.first?.venue == "United Center")
        #expect(week.first?.broadcasts == ["TVAS", "SN", "NBCSCH", "NHLN"])
    }

    @Test func nbaLiveScoreboardReadsTheClockAndTheFinal() throws {
        let games = try NBALiveScoreboard().parse(try Self.answer("dliu713__nba-scores-website/todaysScoreboard_00.json"), league: "league_nba").games
        #expect(games.count == 3)
        let warriors = try #require(games.first { $0.id == "0042200163" })
        #expect(warriors.status == .live && warriors.period == 2 && warriors.clock == "7:15" && warriors.gameType == "playoff")
        #expect(warriors.home.names.first == "Golden State Warriors" && warriors.home.score == 39 && warriors.away.score == 30)
        #expect(warriors.season == 2022)
        #expect(games.filter { $0.status == .final }.count == 1)
    }

    @Test func answersThatAreNotTheProvidersShapeAreRefusedWhole() throws {
        for provider in [ESPNScoreboard(), MLBStatsAPI(), NHLWebAPI(), NBALiveScoreboard()] as [any ScoreProvider] {
            #expect(throws: ProviderAnswerError.self) { try provider.parse(Array("<html>busy</html>".utf8), league: provider.leagues[0]) }
            #expect(throws: ProviderAnswerError.self) { try provider.parse(Array("{\"events\":".utf8), league: provider.leagues[0]) }
            #expect(throws: ProviderAnswerError.self) { try provider.parse(Array("{}".utf8), league: provider.leagues[0]) }
        }
        // A game without teams is skipped; the rest of the answer stands.
        let answer =
            #"{"events":[{"id":"1","date":"2026-10-04T17:00Z","status":{"type":{"name":"STATUS_FINAL","state":"post","completed":true}},"competitions":[{"competitors":[]}]}]}"#
        let parsed = try ESPNScoreboard().parse(Array(answer.utf8), league: "league_nfl")
        #expect(parsed.games.isEmpty && parsed.skipped.count == 1)
    }
}
