import Canon
import CloudCore
import CloudHTTP
import CloudPostgres
import CloudRuntime
import Feeds
import Foundation
import HTTPTypes
import SportsDomain
import Testing

/// The score feeds against a replay server of the providers' recorded answers (and answers derived from them as a day
/// unfolds), on loopback: games move through their states, devices following the season see each change, bad input
/// changes nothing, providers fail over and are disabled by the rules in docs/FEEDS.md.
@Suite(.bounded) struct FeedTests {
    static func dataset(_ seasons: Set<String>) throws -> CanonicalDataset {
        try CanonicalDataset.load(from: CanonicalFixtures.root.appendingPathComponent("Resources/canonical").path, gameSeasons: seasons)
    }

    /// A poller writing to the test container's development database, asking the replay server for every provider (or
    /// for `providers` only), with the configuration `configure` leaves.
    static func poller(
        _ server: TestServer, base: String, clock: ServerClock = .system, providers: [any ScoreProvider]? = nil,
        configure: (inout FeedConfiguration) -> Void = { _ in }
    ) -> FeedPoller {
        var configuration = FeedConfiguration()
        if let providers { configuration.providers = providers }
        configuration.baseURLs = Dictionary(uniqueKeysWithValues: configuration.providers.map { ($0.name, base) })
        configuration.targets = [(TestServer.development.container, "development")]
        configure(&configuration)
        return FeedPoller(
            records: server.dependencies.records, canonical: CanonicalEndpoints(records: server.dependencies.records), configuration: configuration,
            clock: clock, logger: TestDatabase.logger)
    }

    /// One round of due polls (of `league`, or of every league), moving the clock to each wait for a provider's rate
    /// limit (a second at most), never as far as an answer's deadline.
    static func round(_ poller: FeedPoller, league: String? = nil, clock: ManualClock) async throws {
        let done = ManagedAtomicFlag()
        async let polled: Void = {
            if let league { await poller.runDue(league: league) } else { await poller.runDue() }
            done.set()
            clock.sleepersChanges.changed()
        }()
        try await eventually("the round ends", on: clock.sleepersChanges) {
            if let wake = clock.nextWake, wake - clock.now <= 1000 { clock.advance(by: .milliseconds(wake - clock.now)) }
            return done.isSet
        }
        await polled
    }

    static func recorded(_ path: String) throws -> JSONValue {
        let url = CanonicalFixtures.root.deletingLastPathComponent().appendingPathComponent("shared/data/raw/games/" + path)
        let bytes = Array(try #require(FileManager.default.contents(atPath: url.path), "\(url.path): ../shared must be beside the repository"))
        // The MLB Stats API's recorded answers start with a UTF-8 byte order mark.
        return try JSONValue.parse(bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes)
    }

    static let espnNFL = "phillipbritain__ScoreMap/server/tests/ScoreMap.Server.Tests/Fixtures/Espn/nfl.json"
    static let espnMLS = "phillipbritain__ScoreMap/server/tests/ScoreMap.Server.Tests/Fixtures/Espn/soccer-mls-scheduled.json"
    static let mlbDay = "zero-sum-seattle__python-mlb-statsapi/tests/mock_tests/mock_json/schedule/schedule_date.json"

    static func game(_ server: TestServer, _ id: String, zone: String) async throws -> [String: JSONValue] {
        let reply = try await server.call(
            "records/lookup", ["records": [["recordName": .string(id)]], "zoneID": ["zoneName": .string(zone)]], database: "public")
        return reply.records.first?["fields"]?.objectValue ?? [:]
    }

    static func value(_ fields: [String: JSONValue], _ name: String) -> JSONValue? { fields[name]?["value"] }

    @Test func aDayOfFootballUnfoldsAndAFollowingDeviceSeesEveryState() async throws {
        try await TestServer.runImported(try Self.dataset(["nfl_2026"])) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                let path = "/football/nfl/scoreboard?dates=20261004&limit=1000"
                let day = CivilDate(year: 2026, month: 10, day: 4)!
                let recorded = try Self.recorded(Self.espnNFL)
                let zone = "games_nfl_2026"
                let carolina = "game_nfl_2026_401872978"
                var statuses: [String] = []
                var token = try await server.call("changes/zone", ["zones": [["zoneID": ["zoneName": .string(zone)]]]], database: "public")
                    .json["zones"]![0]!["syncToken"]!.stringValue!

                // Before kick-off, at kick-off's third quarter (the recorded answer), at the final whistle.
                let answers = [
                    Self.espn(recorded, event: "401872978", state: "pre"), recorded,
                    Self.espn(recorded, event: "401872978", state: "post", home: 25, away: 19),
                ]
                for (index, answer) in answers.enumerated() {
                    replay.answer(path, Array(JSONWriter.encode(answer).utf8))
                    let wait: JSONValue = ["zones": [["zoneID": ["zoneName": .string(zone)], "syncToken": .string(token)]], "timeout": 30]
                    async let waiting = server.call("changes/wait", wait, database: "public")
                    if index > 0 {
                        let feed = server.dependencies.records.changes.feed
                        try await eventually("the device waits", on: feed.waitingChanges) { feed.waiting == 1 }
                    }
                    let report = await poller.poll(league: "league_nfl", days: day...day, today: day)
                    #expect(report.provider == "espn" && report.refused.isEmpty, "\(report)")
                    #expect(try await waiting.json["changed"] == true)
                    let delta = try await server.call(
                        "changes/zone", ["zones": [["zoneID": ["zoneName": .string(zone)], "syncToken": .string(token)]]], database: "public")
                    token = delta.json["zones"]![0]!["syncToken"]!.stringValue!
                    let carolinaGame = delta.json["zones"]![0]!["records"]!.arrayValue!.first { $0["recordName"]?.stringValue == carolina }
                    statuses.append(carolinaGame?["fields"]?["status"]?["value"]?.stringValue ?? "unchanged")
                    guard index == 1 else { continue }
                    // The scoreboard: live games first, then upcoming by start time, then finals.
                    let board = try await server.call(
                        "canonical/games", ["date": "2026-10-04", "league": "nfl", "order": "scoreboard"], database: "public")
                    let games = try #require(board.json["games"]?.arrayValue)
                    #expect(games.first?["canonicalId"] == .string(carolina) && games.first?["status"] == "live")
                    #expect(games.first?["period"] == 3 && games.first?["clock"] == "4:28" && games.first?["updatedAt"] != nil)
                    let ranks = games.compactMap { $0["status"]?.stringValue.flatMap(Game.Status.init(rawValue:))?.scoreboardRank }
                    #expect(ranks == ranks.sorted() && ranks.count == games.count)
                }
                #expect(statuses == ["scheduled", "live", "final"] || statuses == ["unchanged", "live", "final"])

                let final = try await Self.game(server, carolina, zone: zone)
                #expect(Self.value(final, "homeScore") == 25 && Self.value(final, "awayScore") == 19 && Self.value(final, "liveSource") == "espn")
                #expect(Self.value(final, "clock") == nil && Self.value(final, "liveUpdatedAt") != nil)

                // Importing the season's file again (it says scheduled, no score) leaves what the feed wrote.
                _ = try await server.importer.run(
                    try Self.dataset(["nfl_2026"]), container: TestServer.development.container, environment: "development", dryRun: false)
                #expect(Self.value(try await Self.game(server, carolina, zone: zone), "status") == "final")
                // Nor does a less trusted answer that is behind: a final game is never live again.
                replay.answer(path, Array(JSONWriter.encode(recorded).utf8))
                #expect(await poller.poll(league: "league_nfl", days: day...day, today: day).refused.count == 1)

                // An operator's correction by hand is never overwritten by a feed.
                let editor = CanonicalEditor(records: server.dependencies.records)
                let edited = try await editor.edit(
                    recordName: carolina, zone: zone, field: "homeScore", value: "23", in: TestServer.development, by: "ops", dryRun: false,
                    logger: TestDatabase.logger)
                #expect(edited.refused.isEmpty)
                replay.answer(path, Array(JSONWriter.encode(Self.espn(recorded, event: "401872978", state: "post", home: 25, away: 19)).utf8))
                await poller.poll(league: "league_nfl", days: day...day, today: day)
                let pinned = try await Self.game(server, carolina, zone: zone)
                #expect(Self.value(pinned, "homeScore") == 23 && Self.value(pinned, "status") == "final")

                // Bad input: an impossible score and a game moved by days without a postponement leave those games as
                // they were; the rest of the answer is applied.
                var bad = Self.espn(recorded, event: "401872978", state: "post", home: 25, away: 19)
                bad = Self.espn(bad, event: "401872971", state: "post", home: 999, away: 3)
                bad = Self.espn(bad, event: "401872979", date: "2026-10-09T00:15Z")
                bad = Self.espn(bad, event: "401872965", state: "post", home: 14, away: 30)
                replay.answer(path, Array(JSONWriter.encode(bad).utf8))
                let report = await poller.poll(league: "league_nfl", days: day...day, today: day)
                #expect(report.refused.count == 2, "\(report.refused)")
                #expect(Self.value(try await Self.game(server, "game_nfl_2026_401872971", zone: zone), "homeScore") == 26)
                #expect(Self.value(try await Self.game(server, "game_nfl_2026_401872979", zone: zone), "localDate") == "2026-10-05")
                #expect(Self.value(try await Self.game(server, "game_nfl_2026_401872965", zone: zone), "homeScore") == 14)

                // A flexed kick-off on the same local day moves the same game, whoever reports it.
                replay.answer(path, Array(JSONWriter.encode(Self.espn(bad, event: "401872979", date: "2026-10-05T17:00Z")).utf8))
                await poller.poll(league: "league_nfl", days: day...day, today: day)
                let flexed = try await Self.game(server, "game_nfl_2026_401872979", zone: zone)
                #expect(Self.value(flexed, "startTime")?.int64Value == GameTime.milliseconds("2026-10-05T17:00:00Z"))
                #expect(Self.value(flexed, "localDate") == "2026-10-05")
            }
        }
    }

    @Test func theOfficialSourcePostponesAMakeUpMovesTheSameGameAndOnlyItAddsGames() async throws {
        try await TestServer.runImported(try Self.dataset(["mlb_2022"])) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                let zone = "games_mlb_2022"
                let opener = "game_mlb_2022_663178"
                let recorded = try Self.recorded(Self.mlbDay)
                let april7 = CivilDate(year: 2022, month: 4, day: 7)!
                let april8 = april7.adding(days: 1)
                func path(_ day: CivilDate) -> String { "/api/v1/schedule?sportId=1&startDate=\(day)&endDate=\(day)&hydrate=linescore" }

                // The recorded day applies: seven finals (as the dataset has them), the two postponed games' make-ups
                // already moved to the next day stay as they are.
                replay.answer(path(april7), Array(JSONWriter.encode(recorded).utf8))
                let first = await poller.poll(league: "league_mlb", days: april7...april7, today: april7)
                #expect(first.provider == "mlb-stats" && first.refused.isEmpty && first.created == 0, "\(first)")
                #expect(Self.value(try await Self.game(server, "game_mlb_2022_661333", zone: zone), "status") == "final")

                // The Cubs' opener is postponed, then made up the next day: the same record moves, no duplicate.
                replay.answer(path(april7), Array(JSONWriter.encode(Self.mlb(recorded, game: 663178, code: "D", state: "Postponed")).utf8))
                await poller.poll(league: "league_mlb", days: april7...april7, today: april7)
                #expect(Self.value(try await Self.game(server, opener, zone: zone), "status") == "postponed")
                let makeUp = Self.mlb(recorded, game: 663178, code: "F", state: "Final", date: "2022-04-08T18:20:00Z")
                replay.answer(path(april8), Array(JSONWriter.encode(makeUp).utf8))
                await poller.poll(league: "league_mlb", days: april8...april8, today: april8)
                let moved = try await Self.game(server, opener, zone: zone)
                #expect(Self.value(moved, "status") == "final" && Self.value(moved, "localDate") == "2022-04-08")
                // The old day still lists the postponement: the make-up stands.
                replay.answer(path(april7), Array(JSONWriter.encode(Self.mlb(recorded, game: 663178, code: "D", state: "Postponed")).utf8))
                await poller.poll(league: "league_mlb", days: april7...april7, today: april7)
                #expect(Self.value(try await Self.game(server, opener, zone: zone), "status") == "final")
                let cubs = try await server.call(
                    "canonical/games", ["from": "2022-04-07", "to": "2022-04-08", "team": "team_mlb_cubs"], database: "public")
                #expect(cubs.json["games"]?.arrayValue?.filter { $0["canonicalId"] == .string(opener) }.count == 1)

                // A game the dataset lacks: the official source adds it; the season's import keeps it.
                let added = Self.mlb(recorded, game: 663178, code: "S", state: "Scheduled", date: "2022-04-20T18:20:00Z", newID: 999_001)
                let april20 = CivilDate(year: 2022, month: 4, day: 20)!
                replay.answer(path(april20), Array(JSONWriter.encode(added).utf8))
                #expect(await poller.poll(league: "league_mlb", days: april20...april20, today: april20).created == 1)
                _ = try await server.importer.run(
                    try Self.dataset(["mlb_2022"]), container: TestServer.development.container, environment: "development", dryRun: false)
                let kept = try await Self.game(server, "game_mlb_2022_999001", zone: zone)
                #expect(Self.value(kept, "status") == "scheduled" && Self.value(kept, "deprecatedAt") == nil)
            }
        }
    }

    @Test func aRoundPollsALiveGameEveryHalfMinuteTheWeekAheadDailyAndRecentDaysForCorrections() async throws {
        try await TestServer.runImported(try Self.dataset(["nfl_2026"])) { server in
            try await ReplayServer.run { replay, base in
                // 21:30 US Eastern on 2026-10-04: Detroit at Carolina kicked off at 20:20.
                let clock = ManualClock(startingAt: GameTime.milliseconds("2026-10-05T01:30:00Z")!)
                let poller = Self.poller(server, base: base, clock: clock.clock, providers: [ESPNScoreboard()])
                replay.answerEverythingElse(Array(#"{"events":[]}"#.utf8))
                try await Self.round(poller, clock: clock)
                let football = replay.requests.filter { $0.hasPrefix("/football/nfl/") }
                #expect(
                    football.sorted() == [
                        "/football/nfl/scoreboard?dates=20260909-20260915&limit=1000", "/football/nfl/scoreboard?dates=20261001-20261003&limit=1000",
                        "/football/nfl/scoreboard?dates=20261004&limit=1000", "/football/nfl/scoreboard?dates=20261004-20261010&limit=1000",
                        "/football/nfl/scoreboard?dates=20261011-20261017&limit=1000",
                    ])
                // Every league's week ahead and recent days, once; the season's first week of results (the backfill) and
                // the first week after the schedule poll's (the walk over the rest of the season).
                #expect(replay.requests.count == 17)  // 7 × 2, the live day, the backfill's week, the walk's
                // Half a minute later the live game's day is asked again, and the backfill's and the walk's next weeks.
                clock.advance(by: .seconds(30))
                try await Self.round(poller, clock: clock)
                let again: [String] = Array(replay.requests.dropFirst(17)).sorted()
                #expect(
                    again == [
                        "/football/nfl/scoreboard?dates=20260916-20260922&limit=1000", "/football/nfl/scoreboard?dates=20261004&limit=1000",
                        "/football/nfl/scoreboard?dates=20261018-20261024&limit=1000",
                    ])
            }
        }
    }

    @Test func aFailingProviderFallsBackAndAnUnofficialOneIsDisabledForADay() async throws {
        try await TestServer.runImported(try Self.dataset(["nba_2026"])) { server in
            try await ReplayServer.run { replay, base in
                let clock = ManualClock(startingAt: GameTime.milliseconds("2026-10-21T03:00:00Z")!)
                let poller = Self.poller(server, base: base, clock: clock.clock)
                let day = CivilDate(year: 2026, month: 10, day: 20)!
                let cdn = "/static/json/liveData/scoreboard/todaysScoreboard_00.json"
                replay.answer(cdn, status: .internalServerError, [])
                replay.answer("/basketball/nba/scoreboard?dates=20261020&limit=1000", Array(#"{"events":[]}"#.utf8))
                for attempt in 1...4 {
                    let report = await poller.poll(league: "league_nba", days: day...day, today: day)
                    #expect(report.provider == "espn")
                    #expect(report.failures.count == (attempt <= 3 ? 1 : 0), "attempt \(attempt): \(report.failures)")
                    clock.advance(by: .seconds(60))
                }
                #expect(replay.requests.filter { $0 == cdn }.count == 3)
                #expect(poller.providerStates.first { $0.name == "nba-cdn" }?.enabled == false)
                // A day later it is asked again.
                clock.advance(by: .seconds(86_400))
                await poller.poll(league: "league_nba", days: day...day, today: day)
                #expect(replay.requests.filter { $0 == cdn }.count == 4)
                // Requests to a provider are spaced by its rate limit (the NBA's CDN: two a second), on the poller's
                // clock: asked again at once, it waits half a second before asking.
                async let again = poller.poll(league: "league_nba", days: day...day, today: day)
                try await clock.waitForSleepers(1)
                #expect(replay.requests.filter { $0 == cdn }.count == 4)
                clock.advance(by: .seconds(1))
                #expect(await again.provider == "espn")
                #expect(replay.requests.filter { $0 == cdn }.count == 5)
                clock.advance(by: .seconds(60))

                // An official provider is never disabled, however often it fails.
                let nhl = "/v1/score/2026-10-20"
                replay.answer(nhl, status: .serviceUnavailable, [])
                for _ in 1...5 {
                    await poller.poll(league: "league_nhl", days: day...day, today: day)
                    clock.advance(by: .seconds(60))
                }
                #expect(replay.requests.filter { $0 == nhl }.count == 5)
                #expect(poller.providerStates.first { $0.name == "nhl-web" }?.enabled == true)
            }
        }
    }

    /// A provider that sends its headers and then stalls holds only its own league, and only until the deadline over
    /// its whole answer: the NBA's live game is asked for at every live interval, on the dot, while every NHL request
    /// hangs. (25 s, so that no NHL deadline or sleep ends at the very time the NBA's league sleeps until.)
    @Test func aStalledProviderHoldsOnlyItsOwnLeagueAndOnlyUntilItsDeadline() async throws {
        try await TestServer.runImported(try Self.dataset(["nba_2026"])) { server in
            try await ReplayServer.run { replay, base in
                // 16:00 US Eastern on 2026-10-20: Boston at Detroit tipped off an hour ago.
                let start = GameTime.milliseconds("2026-10-20T20:00:00Z")!
                let clock = ManualClock(startingAt: start)
                let poller = Self.poller(server, base: base, clock: clock.clock, providers: [NHLWebAPI(), NBALiveScoreboard()]) {
                    $0.liveInterval = .seconds(25)
                }
                let cdn = "/static/json/liveData/scoreboard/todaysScoreboard_00.json"
                replay.answer(cdn, Array(#"{"scoreboard":{"gameDate":"2026-10-20","games":[]}}"#.utf8))
                replay.stall("/v1/")
                func asked(_ prefix: String) -> Int { replay.requests.filter { $0.hasPrefix(prefix) }.count }
                let polling = Task { try await poller.run() }
                try await eventually("the NHL's API is asked, and hangs", on: replay.requestsChanges) { asked("/v1/") == 1 }
                for round in 0...4 {
                    // The NBA's league asleep until its next live poll.
                    try await clock.waitForSleeper(until: start + Int64(round + 1) * 25_000)
                    #expect(asked(cdn) == round + 1, "round \(round)")
                    clock.advance(by: .seconds(25))
                }
                // The NHL's request failed at its deadline, and the next (the recent days) was asked, however slowly
                // the NHL's league got there on a busy machine.
                try await eventually("the NHL's second request", on: clock.sleepersChanges) {
                    if asked("/v1/") >= 2 { return true }
                    if let wake = clock.nextWake, wake <= clock.now + 10_000 { clock.advance(by: .milliseconds(wake - clock.now)) }
                    return false
                }
                polling.cancel()
                _ = await polling.result
                // An official provider stays on.
                let nhl = try #require(poller.providerStates.first { $0.name == "nhl-web" })
                #expect(nhl.enabled && nhl.lastOutcome.contains("no whole answer within"), "\(nhl)")
            }
        }
    }

    /// A provider's failures and its rest are kept in PostgreSQL: the next process that polls takes them up, and the
    /// rest ends on time (on the poller's clock).
    @Test func aProvidersRestOutlivesItsProcessAndEndsOnTime() async throws {
        try await TestServer.runImported(try Self.dataset(["nba_2026"])) { server in
            try await ReplayServer.run { replay, base in
                let clock = ManualClock(startingAt: GameTime.milliseconds("2026-10-21T03:00:00Z")!)
                let day = CivilDate(year: 2026, month: 10, day: 20)!
                let cdn = "/static/json/liveData/scoreboard/todaysScoreboard_00.json"
                replay.answer(cdn, status: .internalServerError, [])
                replay.answer("/basketball/nba/scoreboard?dates=20261020&limit=1000", Array(#"{"events":[]}"#.utf8))
                func asked() -> Int { replay.requests.filter { $0 == cdn }.count }
                func enabled(_ poller: FeedPoller) -> Bool? { poller.providerStates.first { $0.name == "nba-cdn" }?.enabled }
                let first = Self.poller(server, base: base, clock: clock.clock)
                for _ in 1...3 {
                    await first.poll(league: "league_nba", days: day...day, today: day)
                    clock.advance(by: .seconds(60))
                }
                #expect(enabled(first) == false)

                // A restart: the next process takes up the rest where the first left it.
                let second = Self.poller(server, base: base, clock: clock.clock)
                #expect(enabled(second) == true)
                await second.loadHealth()
                #expect(enabled(second) == false)
                #expect(await second.poll(league: "league_nba", days: day...day, today: day).provider == "espn")
                #expect(asked() == 3)

                // A day later it is asked again, and the process after that knows it is back, no failure counted.
                clock.advance(by: .seconds(86_400))
                replay.answer(cdn, Array(#"{"scoreboard":{"gameDate":"2026-10-20","games":[]}}"#.utf8))
                #expect(await second.poll(league: "league_nba", days: day...day, today: day).provider == "nba-cdn")
                #expect(asked() == 4)
                let third = Self.poller(server, base: base, clock: clock.clock)
                await third.loadHealth()
                #expect(enabled(third) == true)
                let saved = try await server.dependencies.records.jobStates(logger: TestDatabase.logger)["feed nba-cdn"]
                #expect(try JSONValue.parse(Array(try #require(saved).utf8))["failures"] == [])

                // A poll stopped while it waits for the provider's rate limit (a server shutting down) is no failure.
                #expect(await third.poll(league: "league_nba", days: day...day, today: day).provider == "nba-cdn")
                let stopped = Task { await third.poll(league: "league_nba", days: day...day, today: day) }
                try await clock.waitForSleepers(1)
                stopped.cancel()
                _ = await stopped.value
                #expect(third.providerStates.first { $0.name == "nba-cdn" }?.lastOutcome.contains("failed") == false)
                let after = try await server.dependencies.records.jobStates(logger: TestDatabase.logger)["feed nba-cdn"]
                #expect(try JSONValue.parse(Array(try #require(after).utf8))["failures"] == [])
            }
        }
    }

    /// The season so far: a backfill walks every day already played, a week an answer, and every game played gets its
    /// final; a process stopped half-way is followed by one that goes on from where it was, not from the start.
    @Test func aBackfillGivesEveryGamePlayedItsResultAndResumesWhereItWas() async throws {
        let dataset = try Self.dataset(["nba_2026"])
        let season = try #require(dataset.games["nba_2026"])
        let names = Dictionary(uniqueKeysWithValues: dataset.teams.map { ($0.id, $0) })
        try await TestServer.runImported(dataset) { server in
            try await ReplayServer.run { replay, base in
                // Noon US Eastern on 2026-11-28; the season opened on 2026-10-20 and nothing played has a result yet.
                let clock = ManualClock(startingAt: GameTime.milliseconds("2026-11-28T17:00:00Z")!)
                func poller() -> FeedPoller { Self.poller(server, base: base, clock: clock.clock, providers: [ESPNScoreboard()]) }
                // ESPN's scoreboard of the days asked: the season's games of those days, each final with a score made
                // from its id.
                replay.answer { path in
                    guard path.hasPrefix("/basketball/nba/scoreboard?dates="), let dates = path.split(separator: "=").dropFirst().first?.prefix(17)
                    else { return nil }
                    let bounds = dates.split(separator: "-").map { day in
                        "\(day.prefix(4))-\(day.dropFirst(4).prefix(2))-\(day.dropFirst(6).prefix(2))"
                    }
                    let (first, last) = (bounds[0], bounds.count > 1 ? bounds[1] : bounds[0])
                    let events: [JSONValue] = season.filter { $0.localDate >= first && $0.localDate <= last && $0.localDate < "2026-11-28" }.map {
                        game in
                        let id = Int(game.sourceGameId ?? "") ?? 0
                        func side(_ team: String, _ homeAway: String, _ score: Int) -> JSONValue {
                            [
                                "homeAway": .string(homeAway), "team": ["displayName": .string(names[team]?.name ?? team)],
                                "score": .string(String(score)),
                            ]
                        }
                        return [
                            "id": .string(game.sourceGameId ?? ""), "date": .string(game.startTime), "season": ["year": 2027, "type": 2],
                            "status": ["type": ["name": "STATUS_FINAL", "state": "post", "completed": true]],
                            "competitions": [
                                ["competitors": [side(game.homeTeamId, "home", 100 + id % 17), side(game.awayTeamId, "away", 90 + id % 7)]]
                            ],
                        ]
                    }
                    return Array(JSONWriter.encode(["events": .array(events)]).utf8)
                }
                /// The backfill's requests: those for days before the recent poll's (2026-11-25…27).
                func backfills() -> [String] {
                    let scoreboard = "/basketball/nba/scoreboard?dates="
                    return replay.requests.filter { $0.hasPrefix(scoreboard) && $0 < scoreboard + "20261125" }
                }
                func round(_ poller: FeedPoller) async throws { try await Self.round(poller, league: "league_nba", clock: clock) }
                let first = poller()
                for _ in 1...3 { try await round(first) }
                #expect(
                    backfills() == [
                        "/basketball/nba/scoreboard?dates=20261020-20261026&limit=1000",
                        "/basketball/nba/scoreboard?dates=20261027-20261102&limit=1000",
                        "/basketball/nba/scoreboard?dates=20261103-20261109&limit=1000",
                    ])

                // A restart: the next process goes on from the fourth week, to yesterday.
                let second = poller()
                for _ in 1...3 { try await round(second) }
                #expect(
                    backfills().dropFirst(3) == [
                        "/basketball/nba/scoreboard?dates=20261110-20261116&limit=1000",
                        "/basketball/nba/scoreboard?dates=20261117-20261123&limit=1000",
                        "/basketball/nba/scoreboard?dates=20261124-20261127&limit=1000",
                    ])
                let runs = try await server.dependencies.records.jobRuns(logger: TestDatabase.logger)
                #expect(runs.first { $0.job == "backfill league_nba" }?.outcome.contains("caught up to yesterday") == true, "\(runs)")
                let asked = backfills().count
                try await round(second)
                #expect(backfills().count == asked, "caught up: no earlier day is asked again until tomorrow")

                let played = try await server.call(
                    "canonical/games", ["from": "2026-10-20", "to": "2026-11-27", "league": "nba"], database: "public")
                let games = try #require(played.json["games"]?.arrayValue)
                #expect(games.count == season.filter { $0.localDate < "2026-11-28" }.count && games.count > 200)
                #expect(games.allSatisfy { $0["status"] == "final" && $0["homeScore"] != nil })
            }
        }
    }

    /// Where no official source exists (NFL, WNBA, MLS, NWSL: ESPN alone), the provider's next answer confirms what
    /// only an official source may do at once: an NFL game postponed to Monday lands there, an MLS game of a season
    /// the dataset lacks is added. One answer alone changes neither.
    @Test func whereNoOfficialSourceExistsTheProvidersNextAnswerConfirmsAMoveOrANewGame() async throws {
        try await TestServer.runImported(try Self.dataset(["nfl_2026", "mls_2025"])) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                let day = CivilDate(year: 2026, month: 10, day: 4)!
                let football = "/football/nfl/scoreboard?dates=20261004&limit=1000"
                let zone = "games_nfl_2026"
                let atlanta = "game_nfl_2026_401872979"
                // Atlanta at New Orleans, Sunday night, moved by a storm to Monday evening.
                let moved = Self.espn(try Self.recorded(Self.espnNFL), event: "401872979", state: "pre", date: "2026-10-06T23:15Z")
                replay.answer(football, Array(JSONWriter.encode(moved).utf8))
                let once = await poller.poll(league: "league_nfl", days: day...day, today: day)
                #expect(once.refused.contains { $0.contains("401872979") && $0.contains("next answer") }, "\(once.refused)")
                #expect(Self.value(try await Self.game(server, atlanta, zone: zone), "localDate") == "2026-10-05")
                let twice = await poller.poll(league: "league_nfl", days: day...day, today: day)
                #expect(!twice.refused.contains { $0.contains("401872979") }, "\(twice.refused)")
                let monday = try await Self.game(server, atlanta, zone: zone)
                #expect(Self.value(monday, "localDate") == "2026-10-06")
                #expect(Self.value(monday, "startTime")?.int64Value == GameTime.milliseconds("2026-10-06T23:15:00Z"))

                // An MLS game of 2026, a season the dataset lacks: added at the second answer listing it, to its season.
                let soccer = "/soccer/usa.1/scoreboard?dates=20261006&limit=1000"
                let october6 = CivilDate(year: 2026, month: 10, day: 6)!
                replay.answer(soccer, Array(JSONWriter.encode(try Self.recorded(Self.espnMLS)).utf8))
                let first = await poller.poll(league: "league_mls", days: october6...october6, today: october6)
                #expect(first.provider == "espn" && first.created == 0 && first.refused.count == 1, "\(first)")
                let second = await poller.poll(league: "league_mls", days: october6...october6, today: october6)
                #expect(second.created == 1 && second.refused.isEmpty, "\(second)")
                let added = try await Self.game(server, "game_mls_2026_761660", zone: "games_mls_2026")
                #expect(Self.value(added, "homeTeam")?["recordName"] == "team_mls_chicago_fire" && Self.value(added, "status") == "scheduled")
                #expect(Self.value(added, "stadium")?["recordName"] != nil && Self.value(added, "localDate") == "2026-10-06")
            }
        }
    }

    /// A league whose season being played the dataset lacks (MLS: its last file is 2025) is walked from the day after
    /// its last season; each answer with a game only the provider's next answer may add is asked twice, so the season's
    /// games are added as it goes.
    @Test func aSeasonTheDatasetLacksIsWalkedAndItsGamesAdded() async throws {
        try await TestServer.runImported(try Self.dataset(["mls_2025"])) { server in
            try await ReplayServer.run { replay, base in
                let clock = ManualClock(startingAt: GameTime.milliseconds("2026-10-08T16:00:00Z")!)
                let poller = Self.poller(server, base: base, clock: clock.clock, providers: [ESPNScoreboard()]) { $0.backfillDays = 60 }
                let recorded = Array(JSONWriter.encode(try Self.recorded(Self.espnMLS)).utf8)
                replay.answer { path in
                    guard path.hasPrefix("/soccer/usa.1/scoreboard?dates=") else { return Array(#"{"events":[]}"#.utf8) }
                    return path.contains("dates=20260815-20261007") ? recorded : Array(#"{"events":[]}"#.utf8)
                }
                while try await Self.jobRun(server, "backfill league_mls")?.contains("caught up") != true {
                    try await Self.round(poller, league: "league_mls", clock: clock)
                }
                // The regular season 2025 ended on 2025-10-18: from the 19th, 60 days an answer, the last one (with the
                // game) asked twice.
                let walked = replay.requests.filter { $0.hasPrefix("/soccer/usa.1/") && !$0.contains("dates=202610") }
                #expect(walked.first == "/soccer/usa.1/scoreboard?dates=20251019-20251217&limit=1000" && walked.count == 7, "\(walked)")
                #expect(Set(walked.suffix(2)) == ["/soccer/usa.1/scoreboard?dates=20260815-20261007&limit=1000"])
                let added = try await Self.game(server, "game_mls_2026_761660", zone: "games_mls_2026")
                #expect(Self.value(added, "homeTeam")?["recordName"] == "team_mls_chicago_fire")
            }
        }
    }

    static func jobRun(_ server: TestServer, _ job: String) async throws -> String? {
        try await server.dependencies.records.jobRuns(logger: TestDatabase.logger).first { $0.job == job }?.outcome
    }

    /// The official source moves a game to another of the directory's venues, a neutral site (and a day later there);
    /// a new game at a venue the directory lacks is held for an operator (the jobs page lists it), not guessed at the
    /// home team's park, and added once its venue is one the directory knows.
    @Test func anOfficialVenueChangeIsAppliedAndAGameAtAnUnknownVenueIsHeld() async throws {
        try await TestServer.runImported(try Self.dataset(["mlb_2022"])) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                let recorded = try Self.recorded(Self.mlbDay)
                func path(_ day: CivilDate) -> String { "/api/v1/schedule?sportId=1&startDate=\(day)&endDate=\(day)&hydrate=linescore" }
                func atVenue(_ answer: JSONValue, _ name: String) -> [UInt8] {
                    guard case .object(var root) = answer, case .object(var game)? = root["dates"]?[0]?["games"]?[0] else { return [] }
                    game["venue"] = ["name": .string(name)]
                    root["dates"] = [["games": [.object(game)]]]
                    return Array(JSONWriter.encode(.object(root)).utf8)
                }
                // The Cubs' opener, moved to the Tokyo Dome: the same record, there, on Tokyo's day.
                let april7 = CivilDate(year: 2022, month: 4, day: 7)!
                let zone = "games_mlb_2022"
                let opener = "game_mlb_2022_663178"
                replay.answer(path(april7), atVenue(Self.mlb(recorded, game: 663178, code: "S", state: "Scheduled"), "Tokyo Dome"))
                let moved = await poller.poll(league: "league_mlb", days: april7...april7, today: april7)
                #expect(moved.changed == 1 && moved.refused.isEmpty, "\(moved)")
                let tokyo = try await Self.game(server, opener, zone: zone)
                #expect(Self.value(tokyo, "stadium")?["recordName"] == "stadium_mlb_tokyo_dome" && Self.value(tokyo, "neutralSite") == 1)
                #expect(Self.value(tokyo, "localDate") == "2022-04-08")

                // A game the dataset lacks, at a venue the directory does not know: held, not added.
                let april20 = CivilDate(year: 2022, month: 4, day: 20)!
                let added = Self.mlb(recorded, game: 663178, code: "S", state: "Scheduled", date: "2022-04-20T18:20:00Z", newID: 999_002)
                replay.answer(path(april20), atVenue(added, "Estadio Nacional de Costa Rica"))
                let held = await poller.poll(league: "league_mlb", days: april20...april20, today: april20)
                #expect(held.created == 0 && held.refused.contains { $0.contains("held for an operator") }, "\(held)")
                #expect(try await Self.jobRun(server, "held games")?.contains("999002") == true)
                // Once the answer names a venue the directory knows (an operator added it, or the provider corrected it).
                replay.answer(path(april20), atVenue(added, "Wrigley Field"))
                #expect(await poller.poll(league: "league_mlb", days: april20...april20, today: april20).created == 1)
                #expect(try await Self.jobRun(server, "held games") == "none held")
                let wrigley = try await Self.game(server, "game_mlb_2022_999002", zone: zone)
                #expect(Self.value(wrigley, "stadium")?["recordName"] == "stadium_mlb_wrigley_field" && Self.value(wrigley, "neutralSite") == 0)
            }
        }
    }

    /// Games the official schedule no longer lists are retired (cancelled, never deleted) once two of its answers lack
    /// them: the 2026 Western Conference Final ended in four, and its if-necessary games 5 to 7 (in the dataset as the
    /// schedule had them) leave; a game at the edge of the days asked, and one answer alone, retire nothing.
    @Test func ifNecessaryGamesNotNeededAreRetiredByTwoAnswersOfTheOfficialSchedule() async throws {
        let dataset = try Self.dataset(["nhl_2025"])
        let season = try #require(dataset.games["nhl_2025"])
        let codes = Dictionary(uniqueKeysWithValues: dataset.teams.map { ($0.id, $0.abbreviation ?? $0.id) })
        try await TestServer.runImported(dataset) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                // The NHL's week schedule from a day: the season's games of that week, games 5 to 7 of the final gone.
                func week(_ first: String) -> [UInt8] {
                    let last = CivilDate(first)!.adding(days: 6).description
                    let games: [JSONValue] = season.filter { $0.localDate >= first && $0.localDate <= last && $0.gameType == "playoff" }
                        .filter { !["2025030325", "2025030326", "2025030327"].contains($0.sourceGameId ?? "") }
                        .map { game in
                            [
                                "id": .int(Int64(game.sourceGameId ?? "") ?? 0), "season": 20_252_026, "gameType": 3,
                                "startTimeUTC": .string(game.startTime),
                                "gameState": "OFF", "homeTeam": ["abbrev": .string(codes[game.homeTeamId] ?? ""), "score": 3],
                                "awayTeam": ["abbrev": .string(codes[game.awayTeamId] ?? ""), "score": 1],
                            ]
                        }
                    // And the Stanley Cup Final's first game, which the dataset (of 2026-05-18) lacks.
                    let final: JSONValue = [
                        "id": 2_025_030_411, "season": 20_252_026, "gameType": 3, "startTimeUTC": "2026-06-03T00:00:00Z", "gameState": "FUT",
                        "homeTeam": ["abbrev": "COL"], "awayTeam": ["abbrev": "CAR"],
                    ]
                    return Array(JSONWriter.encode(["gameWeek": [["date": .string(first), "games": .array(games + [final])]]]).utf8)
                }
                func status(_ number: Int) async throws -> String? {
                    Self.value(try await Self.game(server, "game_nhl_2025_202503032\(number)", zone: "games_nhl_2025"), "status")?.stringValue
                }
                func poll(_ first: String) async -> FeedPoller.Report {
                    let day = CivilDate(first)!
                    return await poller.poll(league: "league_nhl", days: day...day.adding(days: 6), today: CivilDate(year: 2026, month: 6, day: 10)!)
                }
                replay.answer("/v1/schedule/2026-05-24", week("2026-05-24"))
                #expect(await poll("2026-05-24").provider == "nhl-web")
                #expect(try await status(5) == "scheduled", "one answer alone retires nothing")
                #expect(await poll("2026-05-24").changed >= 1)
                // Game 5 (05-28) retired; game 6 (05-30) is at the edge of these days: left for an answer around it.
                let (five, six) = (try await status(5), try await status(6))
                #expect(five == "cancelled" && six == "scheduled")
                let retired = try await Self.game(server, "game_nhl_2025_2025030325", zone: "games_nhl_2025")
                #expect(Self.value(retired, "statusDetail") == "Not on nhl-web's schedule")

                replay.answer("/v1/schedule/2026-05-27", week("2026-05-27"))
                _ = await poll("2026-05-27")
                _ = await poll("2026-05-27")
                let (four, sixth, seven) = (try await status(4), try await status(6), try await status(7))
                #expect(four == "final" && sixth == "cancelled" && seven == "cancelled")
            }
        }
    }

    /// The walk over the rest of the season finds a start time the league published after the dataset was built: MLB
    /// 2027's opener, in the dataset on its day with no time, gets the official time (and its gamePk) weeks ahead.
    @Test func aStartTimePublishedLaterReachesATimeTBDGameWeeksAhead() async throws {
        let dataset = try Self.dataset(["mlb_2027"])
        let names = Dictionary(uniqueKeysWithValues: dataset.teams.map { ($0.id, $0.name) })
        try await TestServer.runImported(dataset) { server in
            try await ReplayServer.run { replay, base in
                // 2027-03-10: the schedule poll's week ends on the 16th; the opener is on the 25th.
                let clock = ManualClock(startingAt: GameTime.milliseconds("2027-03-10T17:00:00Z")!)
                let poller = Self.poller(server, base: base, clock: clock.clock, providers: [MLBStatsAPI()])
                let opener: JSONValue = [
                    "gamePk": 800_001, "gameDate": "2027-03-25T20:05:00Z", "officialDate": "2027-03-25", "gameType": "R", "gameNumber": 1,
                    "status": ["codedGameState": "S", "detailedState": "Scheduled", "abstractGameState": "Preview"],
                    "teams": [
                        "home": ["team": ["name": .string(names["team_mlb_pirates"] ?? "")]],
                        "away": ["team": ["name": .string(names["team_mlb_athletics"] ?? "")]],
                    ],
                ]
                replay.answer { path in
                    guard path.hasPrefix("/api/v1/schedule") else { return nil }
                    let games: [JSONValue] = path.contains("startDate=2027-03-24") ? [opener] : []
                    return Array(JSONWriter.encode(["dates": [["games": .array(games)]]]).utf8)
                }
                for _ in 1...3 { try await Self.round(poller, league: "league_mlb", clock: clock) }
                #expect(replay.requests.contains { $0.contains("startDate=2027-03-17&endDate=2027-03-23") })
                let game = try await Self.game(server, "game_mlb_2027_2027_03_25_athletics_pirates_1", zone: "games_mlb_2027")
                #expect(Self.value(game, "startTime")?.int64Value == GameTime.milliseconds("2027-03-25T20:05:00Z"))
                #expect(Self.value(game, "timeTBD") == 0 && Self.value(game, "localDate") == "2027-03-25")
                #expect(Self.value(game, "feedIds") == ["mlb-stats:800001"])
            }
        }
    }

    @Test func theNHLsOwnScoresFindTheirGamesByNicknameAndCode() async throws {
        try await TestServer.runImported(try Self.dataset(["nhl_2025"])) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                let day = CivilDate(year: 2026, month: 4, day: 11)!
                // Under ids the dataset does not know, so each game is found by its derived key.
                guard case .object(var answer) = try Self.recorded("kas21__nhl-scoreboard/tests/fixtures/nhl/score_2026-04-11.json"),
                    case .array(let games) = answer["games"]
                else { throw ProviderAnswerError("the recorded NHL answer has games") }
                answer["games"] = .array(
                    games.map { game in
                        guard case .object(var fields) = game, let id = fields["id"]?.int64Value else { return game }
                        fields["id"] = .int(id + 7_000_000_000)
                        return .object(fields)
                    })
                replay.answer("/v1/score/2026-04-11", Array(JSONWriter.encode(.object(answer)).utf8))
                let report = await poller.poll(league: "league_nhl", days: day...day, today: day)
                // The score answer names teams "Bruins" and "BOS" only; every game is one of the dataset's finals.
                #expect(report.provider == "nhl-web" && report.reported == 15 && report.refused.isEmpty && report.created == 0, "\(report)")
                let boston = try await Self.game(server, "game_nhl_2025_2025021261", zone: "games_nhl_2025")
                #expect(Self.value(boston, "status") == "final" && Self.value(boston, "homeScore") == 1 && Self.value(boston, "awayScore") == 2)
                #expect(Self.value(boston, "feedIds") == ["nhl-web:9025021261"])
            }
        }
    }

    @Test func aDoubleheadersGamesFindTheirOwnCanonicalGames() async throws {
        try await TestServer.runImported(try Self.dataset(["mlb_2022"])) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                let day = CivilDate(year: 2022, month: 4, day: 19)!
                let template = try Self.recorded(Self.mlbDay)
                // Under ids the dataset does not know, the second games first: Washington's by game number, the Mets'
                // (no game number) by start time; the second game starts soon after the first ends, not at its slot.
                let games = [
                    Self.mlbGame(
                        template, pk: 900_002, start: "2022-04-19T21:00:00Z", home: "Washington Nationals", away: "Arizona Diamondbacks",
                        score: (1, 0), number: 2),
                    Self.mlbGame(
                        template, pk: 900_001, start: "2022-04-19T17:05:00Z", home: "Washington Nationals", away: "Arizona Diamondbacks",
                        score: (6, 1), number: 1),
                    Self.mlbGame(
                        template, pk: 900_004, start: "2022-04-19T22:40:00Z", home: "New York Mets", away: "San Francisco Giants", score: (3, 1),
                        number: nil),
                    Self.mlbGame(
                        template, pk: 900_003, start: "2022-04-19T19:10:00Z", home: "New York Mets", away: "San Francisco Giants", score: (5, 4),
                        number: nil),
                ]
                replay.answer(
                    "/api/v1/schedule?sportId=1&startDate=2022-04-19&endDate=2022-04-19&hydrate=linescore",
                    Array(JSONWriter.encode(["dates": [["games": .array(games)]]]).utf8))
                let report = await poller.poll(league: "league_mlb", days: day...day, today: day)
                #expect(report.refused.isEmpty && report.created == 0 && report.changed == 4, "\(report)")
                let zone = "games_mlb_2022"
                for (id, pk) in [("662587", 900_001), ("662583", 900_002), ("662350", 900_003), ("662616", 900_004)] {
                    #expect(
                        Self.value(try await Self.game(server, "game_mlb_2022_" + id, zone: zone), "feedIds") == [.string("mlb-stats:\(pk)")], "\(id)"
                    )
                }
            }
        }
    }

    @Test func aGameTwoUnofficialSourcesAgreeOnIsAddedAndPlayedToTheFinal() async throws {
        try await TestServer.runImported(try Self.dataset(["nba_2026"])) { server in
            try await ReplayServer.run { replay, base in
                let poller = Self.poller(server, base: base)
                let day = CivilDate(year: 2026, month: 12, day: 15)!
                let cdn = "/static/json/liveData/scoreboard/todaysScoreboard_00.json"
                let espn = "/basketball/nba/scoreboard?dates=20261215&limit=1000"
                let start = "2026-12-16T00:30:00Z"
                func cdnAnswer(status: Int, text: String, period: Int = 0, clock: String = "", score: (Int, Int) = (0, 0)) -> [UInt8] {
                    let game: JSONValue = [
                        "gameId": "0062600001", "gameStatus": .int(Int64(status)), "gameStatusText": .string(text), "period": .int(Int64(period)),
                        "gameClock": .string(clock), "gameTimeUTC": .string(start),
                        "homeTeam": ["teamCity": "Boston", "teamName": "Celtics", "teamTricode": "BOS", "score": .int(Int64(score.0))],
                        "awayTeam": ["teamCity": "New York", "teamName": "Knicks", "teamTricode": "NYK", "score": .int(Int64(score.1))],
                    ]
                    return Array(JSONWriter.encode(["scoreboard": ["gameDate": "2026-12-15", "games": [game]]]).utf8)
                }
                // An NBA Cup knockout game, announced after the schedule was built: the NBA's scoreboard alone is not enough.
                replay.answer(cdn, cdnAnswer(status: 1, text: "7:30 pm ET"))
                replay.answer(espn, Array(#"{"events":[]}"#.utf8))
                let alone = await poller.poll(league: "league_nba", days: day...day, today: day)
                #expect(alone.provider == "nba-cdn" && alone.created == 0 && alone.refused.count == 1, "\(alone)")
                // ESPN lists it too: two sources agree, and the game is added to its season.
                let listed: JSONValue = [
                    "events": [
                        [
                            "id": "401999999", "date": "2026-12-16T00:30Z", "season": ["year": 2027, "type": 2],
                            "status": ["type": ["name": "STATUS_SCHEDULED", "state": "pre", "completed": false]],
                            "competitions": [
                                [
                                    "competitors": [
                                        ["homeAway": "home", "team": ["displayName": "Boston Celtics", "abbreviation": "BOS"], "score": "0"],
                                        ["homeAway": "away", "team": ["displayName": "New York Knicks", "abbreviation": "NY"], "score": "0"],
                                    ]
                                ]
                            ],
                        ]
                    ]
                ]
                replay.answer(espn, Array(JSONWriter.encode(listed).utf8))
                let agreed = await poller.poll(league: "league_nba", days: day...day, today: day)
                #expect(agreed.created == 1 && agreed.refused.isEmpty, "\(agreed)")
                let id = "game_nba_2026_0062600001"
                let zone = "games_nba_2026"
                let added = try await Self.game(server, id, zone: zone)
                #expect(
                    Self.value(added, "gameType") == "cup" && Self.value(added, "status") == "scheduled"
                        && Self.value(added, "seasonLabel") == "2026-27")
                #expect(Self.value(added, "stadium")?["recordName"] == "stadium_nba_td_garden" && Self.value(added, "localDate") == "2026-12-15")

                // Then it is played: live with the clock, then final.
                replay.answer(cdn, cdnAnswer(status: 2, text: "Q4 1:05", period: 4, clock: "PT01M05.00S", score: (98, 95)))
                #expect(await poller.poll(league: "league_nba", days: day...day, today: day).changed == 1)
                let live = try await Self.game(server, id, zone: zone)
                #expect(Self.value(live, "status") == "live" && Self.value(live, "clock") == "1:05" && Self.value(live, "period") == 4)
                replay.answer(cdn, cdnAnswer(status: 3, text: "Final", period: 4, score: (110, 104)))
                await poller.poll(league: "league_nba", days: day...day, today: day)
                let final = try await Self.game(server, id, zone: zone)
                #expect(Self.value(final, "status") == "final" && Self.value(final, "homeScore") == 110 && Self.value(final, "clock") == nil)
                let games = try await server.call("canonical/games", ["date": "2026-12-15", "team": "team_nba_celtics"], database: "public")
                #expect(games.json["games"]?[0]?["canonicalId"] == .string(id))
            }
        }
    }

    /// One MLB Stats API game, final, from the recorded answer's shape.
    static func mlbGame(_ answer: JSONValue, pk: Int64, start: String, home: String, away: String, score: (Int, Int), number: Int?) -> JSONValue {
        guard case .object(var game)? = answer["dates"]?[0]?["games"]?[0] else { return answer }
        game["gamePk"] = .int(pk)
        game["gameDate"] = .string(start)
        game["status"] = ["codedGameState": "F", "detailedState": "Final", "abstractGameState": "Final"]
        game["gameNumber"] = number.map { .int(Int64($0)) } ?? .null
        game["venue"] = nil
        game["teams"] = [
            "home": ["team": ["name": .string(home)], "score": .int(Int64(score.0))],
            "away": ["team": ["name": .string(away)], "score": .int(Int64(score.1))],
        ]
        return .object(game)
    }

    // MARK: Answers derived from the recorded ones

    /// ESPN's recorded scoreboard with one event moved to another state (`pre`, `in`, `post`), score or start.
    static func espn(_ answer: JSONValue, event id: String, state: String? = nil, home: Int? = nil, away: Int? = nil, date: String? = nil)
        -> JSONValue
    {
        guard case .object(var root) = answer, case .array(let events) = root["events"] else { return answer }
        root["events"] = .array(
            events.map { event in
                guard event["id"]?.stringValue == id, case .object(var fields) = event else { return event }
                if let date { fields["date"] = .string(date) }
                if let state {
                    let (name, completed, detail): (String, Bool, String) =
                        switch state {
                        case "pre": ("STATUS_SCHEDULED", false, "Scheduled")
                        case "in": ("STATUS_IN_PROGRESS", false, "In Progress")
                        default: ("STATUS_FINAL", true, "Final")
                        }
                    fields["status"] = [
                        "period": .int(state == "pre" ? 0 : 4), "displayClock": "0:00",
                        "type": ["name": .string(name), "state": .string(state), "completed": .bool(completed), "shortDetail": .string(detail)],
                    ]
                }
                if case .array(var competitions) = fields["competitions"], case .object(var competition) = competitions[0],
                    case .array(let competitors) = competition["competitors"]
                {
                    competition["competitors"] = .array(
                        competitors.map { competitor in
                            guard case .object(var side) = competitor else { return competitor }
                            let isHome = side["homeAway"] == "home"
                            if let score = isHome ? home : away { side["score"] = .string(String(score)) }
                            if state == "pre" { side["score"] = "0" }
                            return .object(side)
                        })
                    competitions[0] = .object(competition)
                    fields["competitions"] = .array(competitions)
                }
                return .object(fields)
            })
        return .object(root)
    }

    /// The MLB Stats API's recorded day with one game in another state, at another time, or under a new gamePk.
    static func mlb(_ answer: JSONValue, game pk: Int64, code: String, state: String, date: String? = nil, newID: Int64? = nil) -> JSONValue {
        guard case .object(var root) = answer, case .array(let dates) = root["dates"] else { return answer }
        var chosen: JSONValue?
        for day in dates { for game in day["games"]?.arrayValue ?? [] where game["gamePk"]?.int64Value == pk { chosen = game } }
        guard case .object(var game)? = chosen else { return answer }
        game["status"] = ["codedGameState": .string(code), "detailedState": .string(state), "abstractGameState": code == "F" ? "Final" : "Preview"]
        if let date { game["gameDate"] = .string(date) }
        if let newID { game["gamePk"] = .int(newID) }
        root["dates"] = [["games": [.object(game)]]]
        return .object(root)
    }
}
