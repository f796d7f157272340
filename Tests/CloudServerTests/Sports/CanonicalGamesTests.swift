import Canon
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite(.bounded) struct CanonicalGamesTests {
    static let container = "iCloud.com.sportstime.test"

    /// The real dataset with three league-seasons of games: enough for Opening Day in Tokyo, the 2025-26 NBA
    /// opener and a 2024 Fenway game.
    static let dataset = Result {
        try CanonicalDataset.load(
            from: CanonicalFixtures.root.appendingPathComponent("Resources/canonical").path, gameSeasons: ["mlb_2024", "mlb_2025", "nba_2025"])
    }

    static func withImportedServer(_ dataset: CanonicalDataset? = nil, _ body: @Sendable @escaping (TestServer) async throws -> Void) async throws {
        try await TestServer.runImported(try dataset ?? Self.dataset.get(), body)
    }

    static func games(_ server: TestServer, _ body: JSONValue) async throws -> [JSONValue] {
        let reply = try await server.call("canonical/games", body, database: "public")
        #expect(reply.status == 200, "\(reply.json)")
        return reply.json["games"]?.arrayValue ?? []
    }

    @Test func gamesByDateAnswerOpeningDayInTokyoAndTheNBAOpener() async throws {
        try await Self.withImportedServer { server in
            let tokyo = try await Self.games(server, ["date": "2025-03-18", "league": "mlb"])
            let opener = try #require(tokyo.first)
            #expect(tokyo.count == 1)
            #expect(opener["homeTeam"]?["canonicalId"] == "team_mlb_cubs")
            #expect(opener["awayTeam"]?["canonicalId"] == "team_mlb_dodgers")
            #expect(opener["homeScore"] == 1 && opener["awayScore"] == 4)
            #expect(opener["venue"]?["name"] == "Tokyo Dome")
            #expect(opener["neutralSite"] == true)
            #expect(opener["startTime"]?.int64Value == GameTime.milliseconds("2025-03-18T10:10:00Z"))

            let nba = try await Self.games(server, ["date": "2025-10-21", "league": "league_nba"])
            let rockets = try #require(nba.first { $0["awayTeam"]?["canonicalId"] == "team_nba_rockets" })
            #expect(rockets["homeTeam"]?["canonicalId"] == "team_nba_thunder")
            #expect(rockets["venue"]?["name"] == "Paycom Center")
            #expect(rockets["homeScore"] == 125 && rockets["awayScore"] == 124)

            // A team's range (the trip planner): Cubs home and away games of a week, in start order.
            let week = try await Self.games(server, ["team": "team_mlb_cubs", "from": "2025-06-01", "to": "2025-06-07"])
            #expect(!week.isEmpty)
            #expect(week.allSatisfy { $0["homeTeam"]?["canonicalId"] == "team_mlb_cubs" || $0["awayTeam"]?["canonicalId"] == "team_mlb_cubs" })
            let starts = week.compactMap { $0["startTime"]?.int64Value }
            #expect(starts == starts.sorted())

            // Names of the game's date: a 2024 Athletics game is an Oakland Athletics game at the Coliseum.
            let oakland = try await Self.games(server, ["team": "team_mlb_athletics", "from": "2024-04-01", "to": "2024-04-30"])
            #expect(oakland.contains { $0["homeTeam"]?["name"] == "Oakland Athletics" })
        }
    }

    @Test func theDateStripListsDaysWithGames() async throws {
        try await Self.withImportedServer { server in
            let march = try await server.call("canonical/gameDates", ["league": "mlb", "month": "2025-03"], database: "public")
            let days = march.json["dates"]?.arrayValue?.compactMap { $0["date"]?.stringValue } ?? []
            #expect(days.first == "2025-03-18")
            #expect(days.contains("2025-03-27"))
            #expect(!days.contains("2025-03-20"))
            let season = try await server.call("canonical/gameDates", ["team": "team_nba_thunder", "season": 2025], database: "public")
            let thunder = season.json["dates"]?.arrayValue ?? []
            #expect(thunder.first?["date"] == "2025-10-21")
            #expect(thunder.count > 70)
        }
    }

    @Test func aPhotoAtFenwayDuringA2024RedSoxHomeGameMatchesThatGame() async throws {
        try await Self.withImportedServer { server in
            let dataset = try Self.dataset.get()
            let home = try #require(
                dataset.games["mlb_2024"]?.first {
                    $0.homeTeamId == "team_mlb_red_sox" && $0.status == "final" && $0.localDate.hasPrefix("2024-07") && !$0.timeTBD
                })
            let start = try #require(GameTime.milliseconds(home.startTime))
            let photo: JSONValue = ["latitude": 42.3467, "longitude": -71.0972, "time": .int(start + 90 * 60_000)]
            let reply = try await server.call("canonical/match", photo, database: "public")
            #expect(reply.status == 200, "\(reply.json)")
            let best = try #require(reply.json["matches"]?[0])
            #expect(best["game"]?["canonicalId"] == .string(home.id))
            #expect(best["confidence"] == "exact" && best["verdict"] == "autoSelect" && best["day"] == "same")
            #expect(reply.json["verdict"] == "autoSelect")
            #expect(best["venue"]?["canonicalId"] == "stadium_mlb_fenway_park")
            #expect(best["minutesFromStart"] == 90)

            // The same place the next morning: the game is no longer "during", only the same local day at most.
            let later = try await server.call(
                "canonical/match", ["latitude": 42.3467, "longitude": -71.0972, "time": .int(start + 20 * 3_600_000)], database: "public")
            #expect(later.json["matches"]?.arrayValue?.contains { $0["confidence"] == "exact" } != true)
        }
    }

    /// The app's rules on real games: the day after and the day before Opening Day in Tokyo are confirmed, not
    /// dropped, and a photo during the second game of a real doubleheader (Citi Field, 2024-04-04; game 2 has no
    /// start of its own) is the person's choice between the two, neither called exact.
    @Test func adjacentDaysAreConfirmedAndADoubleheaderIsThePersonsChoice() async throws {
        try await Self.withImportedServer { server in
            func match(_ latitude: Double, _ longitude: Double, _ time: String) async throws -> JSONValue {
                let reply = try await server.call(
                    "canonical/match", ["latitude": .double(latitude), "longitude": .double(longitude), "time": .string(time)], database: "public")
                #expect(reply.status == 200, "\(reply.json)")
                return reply.json
            }
            let dayAfter = try await match(35.7056, 139.7519, "2025-03-20T03:00:00Z")
            #expect(dayAfter["verdict"] == "confirm")
            #expect(dayAfter["matches"]?[0]?["day"] == "adjacent" && dayAfter["matches"]?[0]?["game"]?["localDate"] == "2025-03-19")
            let dayBefore = try await match(35.7056, 139.7519, "2025-03-17T03:00:00Z")
            #expect(dayBefore["verdict"] == "confirm" && dayBefore["matches"]?[0]?["game"]?["localDate"] == "2025-03-18")

            let citi = try await match(40.7571, -73.8458, "2024-04-04T19:30:00Z")
            #expect(citi["verdict"] == "choose")
            let ids = Set(citi["matches"]?.arrayValue?.filter { $0["day"] == "same" }.compactMap { $0["game"]?["canonicalId"]?.stringValue } ?? [])
            #expect(ids == ["game_mlb_2024_745844", "game_mlb_2024_745843"])
            #expect(citi["matches"]?.arrayValue?.contains { $0["confidence"] == "exact" } == false)
        }
    }

    /// A photo's sport filters its games, not only its venues: at TD Garden (home of the Celtics and the Bruins) on a
    /// Bruins night, a basketball photo is matched to no hockey game, the same day or the next.
    @Test func aPhotosSportFiltersTheGamesOfAVenueOfTwoSports() async throws {
        let seasons = try CanonicalDataset.load(
            from: CanonicalFixtures.root.appendingPathComponent("Resources/canonical").path, gameSeasons: ["nba_2025", "nhl_2025"])
        try await Self.withImportedServer(seasons) { server in
            func leagues(_ time: String, sport: String) async throws -> Set<String> {
                let photo: JSONValue = ["latitude": 42.3662, "longitude": -71.0621, "time": .string(time), "sport": .string(sport)]
                let reply = try await server.call("canonical/match", photo, database: "public")
                #expect(reply.status == 200, "\(reply.json)")
                return Set(reply.json["matches"]?.arrayValue?.compactMap { $0["game"]?["league"]?.stringValue } ?? [])
            }
            // Bruins at home on 2025-10-09 (23:00Z); no Celtics game that day or the next.
            let hockey = try await leagues("2025-10-10T01:00:00Z", sport: "ice_hockey")
            let sameDay = try await leagues("2025-10-10T01:00:00Z", sport: "basketball")
            let nextDay = try await leagues("2025-10-10T20:00:00Z", sport: "basketball")
            #expect(hockey == ["league_nhl"] && sameDay.isEmpty && nextDay.isEmpty)
        }
    }

    /// `zones/list` hands each zone the token of its own last change: a season nobody wrote to keeps its token while
    /// another season's scores are written, and the listed tokens miss nothing.
    @Test func aSeasonNobodyWroteToKeepsItsTokenInZonesList() async throws {
        try await Self.withImportedServer { server in
            func tokens() async throws -> [String: String] {
                let zones = try await server.call("zones/list", database: "public").json["zones"]?.arrayValue ?? []
                return Dictionary(
                    uniqueKeysWithValues: zones.compactMap { zone in
                        zone["zoneID"]?["zoneName"]?.stringValue.flatMap { name in zone["syncToken"]?.stringValue.map { (name, $0) } }
                    })
            }
            let before = try await tokens()
            var daily = try Self.dataset.get()
            let index = try #require(daily.games["nba_2025"]!.firstIndex { $0.status == "final" })
            daily.games["nba_2025"]![index].homeScore! += 1
            let update = try await server.importer.run(daily, container: Self.container, environment: "development", dryRun: false)
            #expect(update.changes.count == 1)
            let after = try await tokens()
            #expect(after["games_mlb_2024"] == before["games_mlb_2024"] && after["games_mlb_2025"] == before["games_mlb_2025"])
            #expect(after["games_nba_2025"] != before["games_nba_2025"])
            // From the tokens listed before, the written season brings its one change, the others nothing.
            let nba = try await server.pull(zone: "games_nba_2025", from: before["games_nba_2025"], database: "public")
            #expect(nba.records.compactMap { $0["recordName"]?.stringValue } == [daily.games["nba_2025"]![index].id])
            #expect(try await server.pull(zone: "games_mlb_2024", from: before["games_mlb_2024"], database: "public").records.isEmpty)
        }
    }

    @Test func gamesLiveInSeasonZonesAndReachDevicesAsDeltas() async throws {
        var dataset = try CanonicalFixtures.dataset.get()
        dataset.games = try Self.dataset.get().games.filter { $0.key == "nba_2025" }
        let fixed = dataset
        try await Self.withImportedServer(fixed) { server in
            let zones = try await server.call("zones/list", database: "public").json["zones"]?.arrayValue?.compactMap {
                $0["zoneID"]?["zoneName"]?.stringValue
            }
            #expect(zones == ["_defaultZone", "games_nba_2025"])
            let first = try await server.pull(zone: "games_nba_2025", limit: 400, database: "public")
            #expect(first.records.count == fixed.games["nba_2025"]!.count)

            // Re-importing the same data writes nothing; a final score and a reschedule are two updates.
            #expect(try await server.importer.run(fixed, container: Self.container, environment: "development", dryRun: false).changes.isEmpty)
            var daily = fixed
            let scheduled = try #require(daily.games["nba_2025"]!.firstIndex { $0.status == "final" })
            daily.games["nba_2025"]![scheduled].homeScore! += 1
            daily.games["nba_2025"]![scheduled + 1].startTime = "2026-01-01T01:00:00Z"
            let update = try await server.importer.run(daily, container: Self.container, environment: "development", dryRun: false)
            #expect(update.changes.count == 2)
            let delta = try await server.pull(zone: "games_nba_2025", from: first.token, database: "public")
            #expect(
                Set(delta.records.compactMap { $0["recordName"]?.stringValue })
                    == [daily.games["nba_2025"]![scheduled].id, daily.games["nba_2025"]![scheduled + 1].id])
            #expect(try await server.pull(from: nil, database: "public").records.allSatisfy { $0["recordType"] != "Game" })

            // records/query on Game: by league and start time range, sorted.
            let query: JSONValue = [
                "zoneID": ["zoneName": "games_nba_2025"],
                "query": [
                    "recordType": "Game",
                    "filterBy": [
                        [
                            "fieldName": "homeTeam", "comparator": "EQUALS",
                            "fieldValue": ["value": ["recordName": "team_nba_thunder"], "type": "REFERENCE"],
                        ],
                        [
                            "fieldName": "startTime", "comparator": "GREATER_THAN_OR_EQUALS",
                            "fieldValue": ["value": .int(GameTime.milliseconds("2025-11-01T00:00:00Z")!), "type": "TIMESTAMP"],
                        ],
                    ],
                    "sortBy": [["fieldName": "startTime", "ascending": true]],
                ],
                "resultsLimit": 5,
            ]
            let found = try await server.call("records/query", query, database: "public")
            #expect(found.status == 200, "\(found.json)")
            let times = found.records.compactMap { $0["fields"]?["startTime"]?["value"]?.int64Value }
            #expect(times.count == 5 && times == times.sorted())
        }
    }

    @Test func anImportWithGamesOfUnknownTeamsOrVenuesIsRefusedWhole() async throws {
        var dataset = try CanonicalFixtures.dataset.get()
        var games = Array(try Self.dataset.get().games["nba_2025"]!.prefix(3))
        games[0].homeTeamId = "team_nba_seattle_supersonics"
        games[2].stadiumId = "stadium_nba_nowhere"
        dataset.games = ["nba_2025": games]
        let broken = dataset
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            let error = await #expect(throws: CanonError.self) {
                try await server.importer.run(broken, container: Self.container, environment: "development", dryRun: false)
            }
            #expect(error?.description.contains("unknown team team_nba_seattle_supersonics") == true)
            #expect(error?.description.contains("unknown venue stadium_nba_nowhere") == true)
            #expect(try await server.call("zones/list", database: "public").json["zones"]?.arrayValue?.count == 1)
            #expect(try await server.pull(database: "public").records.isEmpty)
        }
    }

    @Test func badQuestionsGetAClearBadRequest() async throws {
        try await Self.withImportedServer { server in
            let cases: [(String, JSONValue, String)] = [
                ("canonical/games", ["date": "2025-02-30"], "date must be a date"),
                ("canonical/games", ["date": "yesterday"], "date must be a date"),
                ("canonical/games", [:], "required"),
                ("canonical/games", ["date": "2025-03-18", "league": "xfl"], "unknown league xfl"),
                ("canonical/games", ["date": "2025-03-18", "team": "team_mlb_expos"], "unknown team team_mlb_expos"),
                ("canonical/games", ["date": "2025-03-18", "venue": "team_mlb_cubs"], "unknown venue"),
                ("canonical/games", ["team": "team_mlb_cubs", "from": "2024-01-01", "to": "2025-12-31"], "at most 366 days"),
                ("canonical/games", ["from": "2025-05-02", "to": "2025-05-01"], "is after"),
                ("canonical/gameDates", ["month": "2025-03"], "league, team or venue is required"),
                ("canonical/gameDates", ["league": "mlb", "month": "2025-13"], "month must be YYYY-MM"),
                ("canonical/match", ["latitude": 95, "longitude": 0, "time": "2024-07-04T18:00:00Z"], "latitude"),
                ("canonical/match", ["latitude": 42.3, "longitude": -71, "time": "July 4th"], "time must be"),
                ("canonical/match", ["latitude": 42.3, "longitude": -71, "time": "2024-07-04T18:00:00Z", "sport": "cricket"], "unknown sport"),
            ]
            for (path, body, reason) in cases {
                let reply = try await server.call(path, body, database: "public")
                #expect(reply.status == 400, "\(path) \(body)")
                #expect(reply.errorCode == "BAD_REQUEST")
                #expect(reply.json["reason"]?.stringValue?.contains(reason) == true, "\(path) \(body): \(reply.json)")
            }
        }
    }

    @Test func largeAnswersAreGzippedForClientsThatAskAndPlainOtherwise() async throws {
        try await Self.withImportedServer { server in
            let path = "http://localhost\(TestServer.base)/public/canonical/games?ckAPIToken=\(server.apiToken)"
            let body = Array(#"{"league": "mlb", "from": "2025-06-01", "to": "2025-06-30"}"#.utf8)
            let plain = try await server.send(path, body)
            #expect(plain.headers[.contentEncoding] == nil)
            let zipped = try await server.send(path, body, headers: [.acceptEncoding: "br, gzip;q=0.8"])
            #expect(zipped.headers[.contentEncoding] == "gzip")
            #expect(zipped.body.readableBytes * 5 < plain.body.readableBytes)
            #expect(try Gzip.decompress(Array(zipped.body.readableBytesView)) == Array(plain.body.readableBytesView))
            let refused = try await server.send(path, body, headers: [.acceptEncoding: "gzip;q=0"])
            #expect(refused.headers[.contentEncoding] == nil)
            // Small answers are not worth it.
            let small = try await server.send(path, Array(#"{"date": "2025-03-18", "league": "mlb"}"#.utf8), headers: [.acceptEncoding: "gzip"])
            #expect(small.headers[.contentEncoding] == nil)
        }
    }
}
