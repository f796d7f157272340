import AsyncHTTPClient
import Canon
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO

/// Canonical games at scale (bench/README.md, "Games"): the import of every season, a device's first sync of
/// the canonical entities plus the current season of every league (records, bytes with and without gzip,
/// time), a daily update (100 final scores and 5 reschedules: import time, delta time and bytes), and
/// games-by-date and photo match at 32 connections against the whole multi-season dataset.
struct GamesBenchmark {
    let server: String
    let query: String
    let datasetPath: String
    let container = "iCloud.com.sportstime.bench"

    var base: String { "\(self.server)/database/1/\(self.container)/development/public" }

    func run(http: HTTPClient, client: PostgresPool, logger: Logger) async throws {
        let dataset = try CanonicalDataset.load(from: self.datasetPath)
        let records = try await Stores(client: client).records(logger: logger)
        let importer = CanonicalImporter(records: records, logger: logger)
        let games = dataset.games.values.map(\.count).reduce(0, +)
        var lines: [(String, String)] = []

        var start = ContinuousClock.now
        let created = try await importer.run(dataset, container: self.container, environment: "development", dryRun: false).changes.count
        lines.append(("import, every season (\(dataset.games.count) files, \(games) games)", "\(Self.ms(since: start)) ms, \(created) records"))
        start = ContinuousClock.now
        let unchanged = try await importer.run(dataset, container: self.container, environment: "development", dryRun: false).changes.count
        lines.append(("re-import of the same data (changes: \(unchanged))", "\(Self.ms(since: start)) ms"))

        // The current season of every league: its newest file.
        let current = Dictionary(grouping: dataset.games.keys) { $0.split(separator: "_")[0] }.values.map { $0.max()! }.sorted()
        let zones = [defaultZoneName] + current.map(CanonicalDataset.gameZone)
        let plain = try await self.pull(http, zones: zones, from: [:], gzip: false)
        let zipped = try await self.pull(http, zones: zones, from: [:], gzip: true)
        lines.append(("first sync: \(zones.count) zones (\(current.joined(separator: " ")))", "\(plain.records) records"))
        lines.append(("  plain", "\(Self.mb(plain.bytes)) MB in \(plain.ms) ms, \(plain.requests) requests"))
        lines.append(("  gzip", "\(Self.mb(zipped.bytes)) MB in \(zipped.ms) ms (\(Self.ratio(zipped.bytes, plain.bytes)) of plain)"))

        // A day of results: 100 final scores (games that were scheduled, else a corrected score) and 5 reschedules.
        var daily = dataset
        var touched = 0
        for season in current where touched < 105 {
            for index in daily.games[season]!.indices where touched < 105 {
                if touched < 100 {
                    daily.games[season]![index].status = "final"
                    daily.games[season]![index].homeScore = (daily.games[season]![index].homeScore ?? 0) + 1
                    daily.games[season]![index].awayScore = daily.games[season]![index].awayScore ?? 0
                } else {
                    daily.games[season]![index].startTime = "2030-01-01T00:00:00Z"
                }
                touched += 1
            }
        }
        start = ContinuousClock.now
        let updated = try await importer.run(daily, container: self.container, environment: "development", dryRun: false).changes.count
        lines.append(("daily update import (\(updated) changes)", "\(Self.ms(since: start)) ms"))
        let deltaPlain = try await self.pull(http, zones: zones, from: plain.tokens, gzip: false)
        let deltaZipped = try await self.pull(http, zones: zones, from: plain.tokens, gzip: true)
        lines.append(("daily delta pull (\(deltaPlain.records) records)", "\(deltaPlain.ms) ms, \(Self.kb(deltaPlain.bytes)) kB plain"))
        lines.append(("  gzip", "\(deltaZipped.ms) ms, \(Self.kb(deltaZipped.bytes)) kB"))

        // Questions against every season: random days (any league, or one), random venue-and-start pairs.
        let all = dataset.games.values.flatMap { $0 }
        let stadiums = Dictionary(uniqueKeysWithValues: dataset.stadiums.map { ($0.id, $0) })
        var generator = SystemRandomNumberGenerator()
        let leagues = ["", "mlb", "nba", "nhl", "nfl"]
        let byDate = (0..<400).map { _ -> String in
            let game = all.randomElement(using: &generator)!
            let league = leagues.randomElement(using: &generator)!
            return JSONWriter.encode(
                league.isEmpty ? ["date": .string(game.localDate)] : ["date": .string(game.localDate), "league": .string(league)])
        }
        let matches = (0..<400).map { _ -> String in
            let game = all.randomElement(using: &generator)!
            let venue = stadiums[game.stadiumId]!
            return JSONWriter.encode([
                "latitude": .double(venue.latitude + 0.001), "longitude": .double(venue.longitude),
                "time": .int(GameTime.milliseconds(game.startTime)! + 3_600_000),
            ])
        }
        for (name, path, bodies) in [("games by date", "canonical/games", byDate), ("match", "canonical/match", matches)] {
            _ = try await self.load(http, path: path, bodies: bodies, connections: 32, total: 400)  // warm the catalog
            let result = try await self.load(http, path: path, bodies: bodies, connections: 32, total: 8000)
            lines.append(
                (
                    "\(name) at 32 connections (\(games) games)",
                    String(format: "%.0f req/s, p50 %.1f ms, p99 %.1f ms", result.rate, result.p50, result.p99)
                ))
        }
        for (name, value) in lines { print(Benchmark.pad(name, 64) + value) }
    }

    struct Pull {
        var records = 0, bytes = 0, requests = 0, ms = 0
        var tokens: [String: String] = [:]
    }

    /// Pulls `zones` from `from` (no token: from the start) the way the SDK does: one `changes/zone` request for
    /// every zone that has more, 200 changes per zone per page. Counts the bytes on the wire.
    func pull(_ http: HTTPClient, zones: [String], from tokens: [String: String], gzip: Bool) async throws -> Pull {
        var result = Pull(tokens: tokens)
        var remaining = zones
        let start = ContinuousClock.now
        while !remaining.isEmpty {
            let entries = remaining.map { zone -> JSONValue in
                var entry: [String: JSONValue] = ["zoneID": ["zoneName": .string(zone)], "resultsLimit": 200]
                if let token = result.tokens[zone] { entry["syncToken"] = .string(token) }
                return .object(entry)
            }
            var request = HTTPClientRequest(url: "\(self.base)/changes/zone?\(self.query)")
            request.method = .POST
            if gzip { request.headers.add(name: "Accept-Encoding", value: "gzip") }
            request.body = .bytes(ByteBuffer(string: JSONWriter.encode(["zones": .array(entries)])))
            let response = try await http.execute(request, timeout: .seconds(60))
            let wire = Array(try await response.body.collect(upTo: 256 << 20).readableBytesView)
            result.bytes += wire.count
            result.requests += 1
            let json = try JSONValue.parse(response.headers["Content-Encoding"].first == "gzip" ? try Gzip.decompress(wire) : wire)
            remaining = []
            for zone in json["zones"]?.arrayValue ?? [] {
                guard let name = zone["zoneID"]?["zoneName"]?.stringValue, let token = zone["syncToken"]?.stringValue else {
                    throw BenchError("changes/zone failed: \(zone)")
                }
                result.records += zone["records"]?.arrayValue?.count ?? 0
                result.tokens[name] = token
                if zone["moreComing"] == true { remaining.append(name) }
            }
        }
        result.ms = Self.ms(since: start)
        return result
    }

    /// `total` POSTs of `bodies` (round robin) over `connections` concurrent loops; rate and latency percentiles.
    func load(_ http: HTTPClient, path: String, bodies: [String], connections: Int, total: Int) async throws -> (
        rate: Double, p50: Double, p99: Double
    ) {
        try await Benchmark.concurrently(connections: connections, total: total) { loop, index in
            var request = HTTPClientRequest(url: "\(self.base)/\(path)?\(self.query)")
            request.method = .POST
            request.body = .bytes(ByteBuffer(string: bodies[(loop * 31 + index) % bodies.count]))
            let response = try await http.execute(request, timeout: .seconds(60))
            _ = try await response.body.collect(upTo: 64 << 20)
            guard response.status == .ok else { throw BenchError("\(path) answered \(response.status)") }
        }
    }

    static func ms(since start: ContinuousClock.Instant) -> Int { Int(Benchmark.seconds(ContinuousClock.now - start) * 1000) }
    static func mb(_ bytes: Int) -> String { String(format: "%.2f", Double(bytes) / 1_000_000) }
    static func kb(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1000) }
    static func ratio(_ part: Int, _ whole: Int) -> String { String(format: "%.0f %%", Double(part) / Double(max(whole, 1)) * 100) }
}
