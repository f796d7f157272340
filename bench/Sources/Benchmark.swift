import AsyncHTTPClient
import CloudCore
import CloudPostgres
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO

/// Measures a running server against the raw PostgreSQL work it stands for, on the same database:
/// push (records/modify, 200 operations), pull (changes/zone, 200 per page), empty polls at 32 connections,
/// and the time of a 200-change delta with 10k and with 1M records in the zone. See bench/README.md.
@main
struct Benchmark {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        if environment["BENCH_SUITE"] == "catalog" {
            try CatalogBenchmark(
                datasetPath: environment["BENCH_DATASET"] ?? "Resources/canonical", rounds: Int(environment["BENCH_ROUNDS"] ?? "") ?? 200
            ).run()
            return
        }
        guard let server = environment["BENCH_SERVER"], let databaseText = environment["BENCH_DATABASE_URL"],
            let apiToken = environment["BENCH_API_TOKEN"], let webToken = environment["BENCH_WEB_AUTH_TOKEN"],
            let userRecordName = environment["BENCH_USER_RECORD_NAME"]
        else {
            print("run bench/run.sh, which starts PostgreSQL and the server and sets BENCH_* variables")
            return
        }
        if environment["BENCH_SUITE"] == "hotpath" {
            let bench = HotPathBenchmark(
                server: server, floorURL: environment["BENCH_FLOOR_URL"], apiToken: apiToken, webToken: webToken,
                rounds: Int(environment["BENCH_ROUNDS"] ?? "") ?? 500,
                settle: .seconds(Int(environment["BENCH_SETTLE_SECONDS"] ?? "") ?? 11))
            try await Self.withClients(database: databaseText) { http, client, logger in
                var copy = bench
                try await copy.run(http: http, client: client.client, logger: logger)
            }
            return
        }
        if environment["BENCH_SUITE"] == "games" {
            try await Self.withClients(database: databaseText) { http, client, logger in
                try await GamesBenchmark(
                    server: server, query: "ckAPIToken=\(apiToken)", datasetPath: environment["BENCH_DATASET"] ?? "Resources/canonical"
                )
                .run(http: http, client: client, logger: logger)
            }
            return
        }
        let bench = Benchmark(
            base: "\(server)/database/1/iCloud.com.sportstime.bench/development/private",
            query: "ckAPIToken=\(apiToken)&ckWebAuthToken=\(webToken)", userRecordName: userRecordName,
            batches: Int(environment["BENCH_BATCHES"] ?? "") ?? 50, bigZoneRecords: Int(environment["BENCH_BIG_RECORDS"] ?? "") ?? 1_000_000)
        try await Self.withClients(database: databaseText) { http, client, logger in
            try await bench.run(http: http, client: client.client, logger: logger)
        }
    }

    /// Runs `body` with an HTTP client and a PostgreSQL client; a failure is printed, not thrown.
    static func withClients(database: String, _ body: @Sendable (HTTPClient, PostgresPool, Logger) async throws -> Void) async throws {
        var logger = Logger(label: "bench")
        logger.logLevel = .error
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(connectionPool: .init(idleTimeout: .seconds(30))))
        do {
            try await withDatabasePool(try DatabaseURL(database), maximumConnections: 32, logger: logger) { client in
                try await body(http, client, logger)
            }
        } catch {
            print("benchmark failed: \(String(reflecting: error))")
        }
        try await http.shutdown()
    }

    let base: String
    let query: String
    let userRecordName: String
    let batches: Int
    let bigZoneRecords: Int

    struct Row {
        var name: String
        var server: String
        var raw: String
        var ratio: String
    }

    func run(http: HTTPClient, client: PostgresClient, logger: Logger) async throws {
        var rows: [Row] = []
        // Make the account's database and find its ids for the raw SQL.
        _ = try await self.post(http, "records/modify", ["operations": [Self.create("warmup", 0)]])
        let (databaseID, zoneID) = try await self.ids(client, logger: logger)

        // Push: records/modify with 200 creates per request vs. one transaction per 200-row upsert.
        // Request bodies are built before the clock starts; replies are only scanned, so the load generator's
        // own JSON work does not count against the server. Server and raw batches alternate, so both meet the
        // same table size and the same machine noise.
        let bodies = (0..<self.batches).map { batch in JSONWriter.encode(["operations": .array((0..<200).map { Self.create("p\(batch)_\($0)", $0) })])
        }
        var serverTime = Duration.zero
        var rawTime = Duration.zero
        for (batch, body) in bodies.enumerated() {
            let start = ContinuousClock.now
            let reply = try await self.postRaw(http, "records/modify", body)
            serverTime += ContinuousClock.now - start
            guard Self.count(of: "\"recordChangeTag\"", in: reply) == 200 else {
                throw BenchError("push failed: \(String(decoding: reply, as: UTF8.self).prefix(300))")
            }
            let rawStart = ContinuousClock.now
            try await Self.rawPush(client, databaseID: databaseID, zoneID: zoneID, prefix: "raw\(batch)_", logger: logger)
            rawTime += ContinuousClock.now - rawStart
        }
        let pushServer = Double(self.batches * 200) / Self.seconds(serverTime)
        let pushRaw = Double(self.batches * 200) / Self.seconds(rawTime)
        rows.append(
            Row(
                name: "push, records/modify 200 ops (rows/s)", server: Self.format(pushServer), raw: Self.format(pushRaw),
                ratio: Self.percent(pushServer / pushRaw)))

        // Pull: every change from the start, 200 per page; after fresh statistics (as autovacuum keeps them) and a
        // warm-up, the best of three runs each.
        try await client.query("ANALYZE records", logger: logger)
        var pulled = 0
        _ = try await Self.rawPull(client, zoneID: zoneID, logger: logger)
        var pullServer = 0.0
        var pullRaw = 0.0
        for _ in 0..<3 {
            pulled = 0
            let start = ContinuousClock.now
            _ = try await self.pullAll(http, from: nil) { pulled += $0 }
            pullServer = max(pullServer, Double(pulled) / Self.seconds(ContinuousClock.now - start))
            let rawStart = ContinuousClock.now
            let rawPulled = try await Self.rawPull(client, zoneID: zoneID, logger: logger)
            pullRaw = max(pullRaw, Double(rawPulled) / Self.seconds(ContinuousClock.now - rawStart))
        }
        rows.append(
            Row(
                name: "pull, changes/zone 200/page (rows/s, \(pulled) rows)", server: Self.format(pullServer), raw: Self.format(pullRaw),
                ratio: Self.percent(pullServer / pullRaw)))

        // Empty polls at 32 connections.
        let token = try await self.currentToken(http)
        let (pollRate, pollP99) = try await self.emptyPolls(http, token: token, connections: 32, total: 20_000)
        rows.append(
            Row(
                name: "empty poll at 32 connections (req/s)", server: Self.format(pollRate), raw: "-",
                ratio: "p99 \(String(format: "%.1f", pollP99)) ms"))

        // Delta time: 200 changes after a token, with 10k and with `bigZoneRecords` records in the zone.
        try await Self.bulkLoad(client, databaseID: databaseID, zoneID: zoneID, upTo: 10_000, logger: logger)
        let small = try await self.deltaTime(http, client: client, databaseID: databaseID, zoneID: zoneID, logger: logger)
        try await Self.bulkLoad(client, databaseID: databaseID, zoneID: zoneID, upTo: self.bigZoneRecords, logger: logger)
        let big = try await self.deltaTime(http, client: client, databaseID: databaseID, zoneID: zoneID, logger: logger)
        rows.append(
            Row(
                name: "200-change delta, 10k vs \(self.bigZoneRecords / 1000)k records (ms)", server: String(format: "%.2f", small),
                raw: String(format: "%.2f", big), ratio: String(format: "%.2f×", big / small)))

        print("")
        print("StadiumCloud benchmark (release build, server and load generator on one 2-core machine)")
        print(Self.pad("measure", 52) + Self.pad("server", 14) + Self.pad("raw PG", 14) + "ratio")
        for row in rows { print(Self.pad(row.name, 52) + Self.pad(row.server, 14) + Self.pad(row.raw, 14) + row.ratio) }
        print("(delta row: the columns are the 10k and the large zone; goal ≤ 1.5×. Goals for pull and push: ≥ 50 % of raw.)")
    }

    // MARK: Server calls

    static func create(_ name: String, _ n: Int) -> JSONValue {
        [
            "operationType": "create",
            "record": [
                "recordName": .string(name), "recordType": "Visit",
                "fields": [
                    "n": ["value": .int(Int64(n))], "notes": ["value": "A visit to the ballpark with friends"],
                    "visitedAt": ["value": 1_718_611_850_000, "type": "TIMESTAMP"],
                    "stadium": ["value": ["recordName": "stadium_mlb_oracle_park", "action": "NONE"]],
                ],
            ],
        ]
    }

    func post(_ http: HTTPClient, _ path: String, _ body: JSONValue) async throws -> JSONValue {
        var request = HTTPClientRequest(url: "\(self.base)/\(path)?\(self.query)")
        request.method = .POST
        request.body = .bytes(ByteBuffer(string: JSONWriter.encode(body)))
        let response = try await http.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 64 * 1024 * 1024)
        return try JSONValue.parse(bytes.readableBytesView)
    }

    /// Pulls the default zone from `token` until moreComing is false; returns the final token. Reads only the
    /// token, moreComing and the number of records of each page.
    func pullAll(_ http: HTTPClient, from token: String?, onPage: (Int) -> Void) async throws -> String {
        var token = token
        while true {
            var zone: [String: JSONValue] = ["zoneID": ["zoneName": "_defaultZone"], "resultsLimit": 200]
            if let token { zone["syncToken"] = .string(token) }
            let reply = try await self.postRaw(http, "changes/zone", JSONWriter.encode(["zones": [.object(zone)]]))
            guard let next = Self.stringValue(of: "\"syncToken\":\"", in: reply) else {
                throw BenchError("pull failed: \(String(decoding: reply.prefix(300), as: UTF8.self))")
            }
            onPage(Self.count(of: "\"recordName\"", in: reply))
            token = next
            if Self.count(of: "\"moreComing\":true", in: reply.suffix(64)) == 0 { return next }
        }
    }

    func postRaw(_ http: HTTPClient, _ path: String, _ body: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: "\(self.base)/\(path)?\(self.query)")
        request.method = .POST
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(60))
        return Array(try await response.body.collect(upTo: 64 * 1024 * 1024).readableBytesView)
    }

    /// How often `needle` occurs in `haystack`.
    static func count(of needle: String, in haystack: some Collection<UInt8>) -> Int {
        let pattern = Array(needle.utf8)
        return Array(haystack).withUnsafeBufferPointer { bytes in
            guard bytes.count >= pattern.count else { return 0 }
            var count = 0
            var index = 0
            outer: while index <= bytes.count - pattern.count {
                for offset in 0..<pattern.count where bytes[index + offset] != pattern[offset] {
                    index += 1
                    continue outer
                }
                count += 1
                index += pattern.count
            }
            return count
        }
    }

    /// The string after the last `prefix` (up to the next quote).
    static func stringValue(of prefix: String, in bytes: [UInt8]) -> String? {
        let pattern = Array(prefix.utf8)
        guard bytes.count >= pattern.count else { return nil }
        for start in stride(from: bytes.count - pattern.count, through: 0, by: -1)
        where bytes[start] == pattern[0] && Array(bytes[start..<start + pattern.count]) == pattern {
            let valueStart = start + pattern.count
            guard let end = bytes[valueStart...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            return String(decoding: bytes[valueStart..<end], as: UTF8.self)
        }
        return nil
    }

    /// The zone's current token, from zones/list (no records are read).
    func currentToken(_ http: HTTPClient) async throws -> String {
        var request = HTTPClientRequest(url: "\(self.base)/zones/list?\(self.query)")
        request.method = .GET
        let response = try await http.execute(request, timeout: .seconds(60))
        let reply = try JSONValue.parse(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        guard let token = reply["zones"]?[0]?["syncToken"]?.stringValue else { throw BenchError("zones/list failed: \(reply)") }
        return token
    }

    func emptyPolls(_ http: HTTPClient, token: String, connections: Int, total: Int) async throws -> (rate: Double, p99: Double) {
        let body = JSONWriter.encode(["zones": [["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(token)]]])
        let result = try await Self.concurrently(connections: connections, total: total) { _, _ in
            _ = try await self.postRaw(http, "changes/zone", body)
        }
        return (result.rate, result.p99)
    }

    /// `total` calls of `request` (given its loop and its index in the loop) over `connections` concurrent loops: the
    /// rate, and the latency percentiles in milliseconds.
    static func concurrently(connections: Int, total: Int, _ request: @escaping @Sendable (Int, Int) async throws -> Void) async throws -> (
        rate: Double, p50: Double, p99: Double
    ) {
        let start = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for loop in 0..<connections {
                group.addTask {
                    var latencies: [Double] = []
                    for index in 0..<(total / connections) {
                        let begin = ContinuousClock.now
                        try await request(loop, index)
                        latencies.append(Self.seconds(ContinuousClock.now - begin) * 1000)
                    }
                    return latencies
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }.sorted()
        }
        let elapsed = Self.seconds(ContinuousClock.now - start)
        return (Double(latencies.count) / elapsed, latencies[latencies.count / 2], latencies[Int(Double(latencies.count) * 0.99)])
    }

    /// Median milliseconds of a 200-change delta (one page) over 20 rounds.
    func deltaTime(_ http: HTTPClient, client: PostgresClient, databaseID: Int64, zoneID: Int64, logger: Logger) async throws -> Double {
        var times: [Double] = []
        for round in 0..<20 {
            let token = try await self.currentToken(http)
            _ = try await self.post(
                http, "records/modify",
                [
                    "operations": .array(
                        (0..<200).map {
                            [
                                "operationType": "forceUpdate",
                                "record": [
                                    "recordName": .string("d\($0)"), "recordType": "Visit", "fields": ["round": ["value": .int(Int64(round))]],
                                ],
                            ]
                        })
                ])
            let start = ContinuousClock.now
            var count = 0
            _ = try await self.pullAll(http, from: token) { count += $0 }
            times.append(Self.seconds(ContinuousClock.now - start) * 1000)
            guard count == 200 else { throw BenchError("delta returned \(count) changes, expected 200") }
        }
        return times.sorted()[times.count / 2]
    }

    // MARK: Raw PostgreSQL

    func ids(_ client: PostgresClient, logger: Logger) async throws -> (Int64, Int64) {
        let rows = try await client.query(
            """
            SELECT d.id, z.id FROM databases d JOIN accounts a ON a.id = d.owner_account_id
            JOIN zones z ON z.database_id = d.id AND z.zone_name = '_defaultZone' AND NOT z.deleted
            WHERE a.user_record_name = \(self.userRecordName) AND d.container = 'iCloud.com.sportstime.bench'
            """, logger: logger)
        for try await (database, zone) in rows.decode((Int64, Int64).self) { return (database, zone) }
        throw BenchError("bench account's database not found")
    }

    /// The same work records/modify does at its core: lock the counter, upsert 200 rows with the same field JSON
    /// the server stores, advance the counters.
    static func rawPush(_ client: PostgresClient, databaseID: Int64, zoneID: Int64, prefix: String, logger: Logger) async throws {
        let names = (0..<200).map { "\(prefix)\($0)" }
        let fields = (0..<200).map { n in
            JSONWriter.encode([
                "n": ["type": "INT64", "value": .int(Int64(n))], "notes": ["type": "STRING", "value": "A visit to the ballpark with friends"],
                "visitedAt": ["type": "TIMESTAMP", "value": 1_718_611_850_000],
                "stadium": ["type": "REFERENCE", "value": ["recordName": "stadium_mlb_oracle_park", "action": "NONE"]],
            ])
        }
        try await client.withConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            var head: Int64 = 0
            for try await seq in try await connection.query("SELECT change_seq FROM databases WHERE id = \(databaseID) FOR UPDATE", logger: logger)
                .decode(Int64.self)
            { head = seq }
            try await connection.query(
                """
                INSERT INTO records (zone_id, record_name, record_type, change_seq, fields, created_ms, created_by, created_device, modified_ms, modified_by, modified_device)
                SELECT \(zoneID), u.name, 'Visit', \(head) + u.ord, u.fields::jsonb, 0, 'raw', 'raw', 0, 'raw', 'raw'
                FROM unnest(\(names)::text[], \(fields)::text[]) WITH ORDINALITY AS u(name, fields, ord)
                ON CONFLICT (zone_id, record_name) DO UPDATE SET change_seq = EXCLUDED.change_seq, fields = EXCLUDED.fields
                """, logger: logger)
            try await connection.query("UPDATE databases SET change_seq = \(head + 200) WHERE id = \(databaseID)", logger: logger)
            try await connection.query("UPDATE zones SET change_seq = \(head + 200) WHERE id = \(zoneID)", logger: logger)
            try await connection.query("COMMIT", logger: logger)
        }
    }

    /// The same rows changes/zone reads, paged by sequence number, 200 at a time.
    static func rawPull(_ client: PostgresClient, zoneID: Int64, logger: Logger) async throws -> Int {
        var since: Int64 = 0
        var total = 0
        while true {
            var count = 0
            let rows = try await client.query(
                """
                SELECT record_name, record_type, change_seq, deleted, fields::text, created_ms, created_by, created_device, modified_ms, modified_by, modified_device
                FROM records WHERE zone_id = \(zoneID) AND change_seq > \(since) ORDER BY change_seq LIMIT 200
                """, logger: logger)
            for try await row in rows.decode((String, String, Int64, Bool, String, Int64, String, String, Int64, String, String).self) {
                since = row.2
                count += 1
            }
            total += count
            if count < 200 { return total }
        }
    }

    /// Fills the zone with generated records up to `upTo` rows, as one transaction that follows the write protocol.
    static func bulkLoad(_ client: PostgresClient, databaseID: Int64, zoneID: Int64, upTo target: Int, logger: Logger) async throws {
        try await client.withConnection { connection in
            var existing = 0
            for try await count in try await connection.query("SELECT count(*)::int8 FROM records WHERE zone_id = \(zoneID)", logger: logger).decode(
                Int64.self)
            { existing = Int(count) }
            let missing = target - existing
            guard missing > 0 else { return }
            try await connection.query("BEGIN", logger: logger)
            var head: Int64 = 0
            for try await seq in try await connection.query("SELECT change_seq FROM databases WHERE id = \(databaseID) FOR UPDATE", logger: logger)
                .decode(Int64.self)
            { head = seq }
            try await connection.query(
                """
                INSERT INTO records (zone_id, record_name, record_type, change_seq, fields, created_ms, created_by, created_device, modified_ms, modified_by, modified_device)
                SELECT \(zoneID), 'bulk_' || (\(head) + g), 'Visit', \(head) + g,
                    jsonb_build_object('n', jsonb_build_object('type', 'INT64', 'value', g), 'notes', '{"type":"STRING","value":"generated"}'::jsonb),
                    0, 'bulk', 'bulk', 0, 'bulk', 'bulk'
                FROM generate_series(1, \(missing)) g
                """, logger: logger)
            try await connection.query("UPDATE databases SET change_seq = \(head + Int64(missing)) WHERE id = \(databaseID)", logger: logger)
            try await connection.query("UPDATE zones SET change_seq = \(head + Int64(missing)) WHERE id = \(zoneID)", logger: logger)
            try await connection.query("COMMIT", logger: logger)
            try await connection.query("ANALYZE records", logger: logger)
        }
    }

    // MARK: Formatting

    func timed(_ rows: Int, _ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        return Double(rows) / Self.seconds(ContinuousClock.now - start)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func format(_ value: Double) -> String { String(format: "%.0f", value) }
    static func percent(_ value: Double) -> String { String(format: "%.0f %%", value * 100) }
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
