import AsyncHTTPClient
import CloudCore
import CloudPostgres
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO

/// The hot path, one client and one request at a time: a single-record save (`records/modify`, the web
/// auth token followed as it rotates, an Idempotency-Key on each) against a raw single-row upsert with its own
/// commit, and the empty polls; for each, what a request costs PostgreSQL by its own counters (transactions, those of
/// them that write, WAL writes and syncs, rows inserted and updated per request); and, with `floorURL`, the floor (the
/// same HTTP stack answering one `SELECT 1`) at one client, so a save can be set against the floor request plus a raw
/// upsert.
struct HotPathBenchmark {
    let server: String
    var floorURL: String? = nil
    let apiToken: String
    var webToken: String
    let rounds: Int
    /// Seconds to wait before reading PostgreSQL's counters: idle backends report theirs within 10 s.
    let settle: Duration

    func url(_ scope: String, _ path: String, web: Bool) -> String {
        "\(self.server)/database/1/iCloud.com.sportstime.bench/development/\(scope)/\(path)?ckAPIToken=\(self.apiToken)"
            + (web ? "&ckWebAuthToken=\(self.webToken)" : "")
    }

    struct Counters {
        var commits: Int64, xids: Int64, walWrites: Int64, walSyncs: Int64, inserted: Int64, updated: Int64

        /// `xids` is the next transaction id: only a transaction that writes takes one (a read's has none).
        static func read(_ client: PostgresClient, logger: Logger) async throws -> Counters {
            let rows = try await client.query(
                """
                SELECT d.xact_commit, pg_snapshot_xmax(pg_current_snapshot())::text::int8, w.wal_write, w.wal_sync,
                    d.tup_inserted, d.tup_updated
                FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()
                """, logger: logger)
            for try await (commits, xids, writes, syncs, inserted, updated) in rows.decode((Int64, Int64, Int64, Int64, Int64, Int64).self) {
                return Counters(commits: commits, xids: xids, walWrites: writes, walSyncs: syncs, inserted: inserted, updated: updated)
            }
            throw BenchError("no statistics")
        }
    }

    /// Runs `round` `rounds` times one after another: p50 in ms, and PostgreSQL's counters per round.
    mutating func measure(_ client: PostgresClient, logger: Logger, _ round: (inout HotPathBenchmark, Int) async throws -> Void) async throws
        -> (p50: Double, perRound: String)
    {
        try await Task.sleep(for: self.settle)
        let before = try await Counters.read(client, logger: logger)
        var latencies: [Double] = []
        for index in 0..<self.rounds {
            let start = ContinuousClock.now
            try await round(&self, index)
            latencies.append(Benchmark.seconds(ContinuousClock.now - start) * 1000)
        }
        try await Task.sleep(for: self.settle)
        let after = try await Counters.read(client, logger: logger)
        // The two counter reads are one transaction each.
        let rounds = Double(self.rounds)
        let per = { (delta: Int64) in String(format: "%.2f", Double(delta) / rounds) }
        let counts =
            "\(per(after.commits - before.commits - 1)) transactions (\(per(after.xids - before.xids)) writing), "
            + "\(per(after.walWrites - before.walWrites)) WAL writes, \(per(after.walSyncs - before.walSyncs)) WAL syncs, "
            + "\(per(after.inserted - before.inserted)) ins, \(per(after.updated - before.updated)) upd"
        return (latencies.sorted()[latencies.count / 2], counts)
    }

    /// Sends `body` and follows the rotated web auth token; fails on anything but 200.
    mutating func send(_ http: HTTPClient, _ scope: String, _ path: String, _ body: String, web: Bool, key: String? = nil) async throws {
        var request = HTTPClientRequest(url: self.url(scope, path, web: web))
        request.method = .POST
        request.body = .bytes(ByteBuffer(string: body))
        if let key { request.headers.add(name: "Idempotency-Key", value: key) }
        let response = try await http.execute(request, timeout: .seconds(30))
        let reply = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw BenchError("\(path) answered \(response.status): \(String(buffer: reply))") }
        if web, let next = response.headers.first(name: "X-Apple-CloudKit-Web-Auth-Token") { self.webToken = next }
    }

    mutating func run(http: HTTPClient, client: PostgresClient, logger: Logger) async throws {
        var lines: [(String, String, String)] = []
        let save = { (index: Int) in
            JSONWriter.encode([
                "operations": [
                    [
                        "operationType": "forceReplace",
                        "record": [
                            "recordName": .string("hot-\(index % 10)"), "recordType": "Visit",
                            "fields": ["n": ["value": .int(Int64(index))], "notes": ["value": "A visit to the ballpark with friends"]],
                        ],
                    ]
                ]
            ])
        }
        for index in 0..<20 { try await self.send(http, "private", "records/modify", save(index), web: true) }  // warm-up
        var result = try await self.measure(client, logger: logger) { bench, index in
            try await bench.send(http, "private", "records/modify", save(index), web: true, key: UUID().uuidString)
        }
        lines.append(("save: records/modify, 1 record, private", String(format: "%.2f", result.p50), result.perRound))
        try await client.query("CREATE TABLE IF NOT EXISTS hot_raw (id int PRIMARY KEY, n bigint, notes text)", logger: logger)
        result = try await self.measure(client, logger: logger) { _, index in
            try await client.query(
                """
                INSERT INTO hot_raw (id, n, notes) VALUES (\(index % 10), \(index), 'A visit to the ballpark with friends')
                ON CONFLICT (id) DO UPDATE SET n = excluded.n, notes = excluded.notes
                """, logger: logger)
        }
        let raw = result.p50
        lines.append(("raw single-row upsert, own commit", String(format: "%.2f", raw), result.perRound))
        let saved = Double(lines[0].1)!
        lines[0].1 += String(format: " (%.2f×)", saved / raw)
        if let floorURL = self.floorURL {
            result = try await self.measure(client, logger: logger) { _, _ in
                var request = HTTPClientRequest(url: floorURL)
                request.method = .POST
                let response = try await http.execute(request, timeout: .seconds(30))
                _ = try await response.body.collect(upTo: 1 << 16)
                guard response.status == .ok else { throw BenchError("the floor answered \(response.status)") }
            }
            lines.append(("floor request (HTTP + SELECT 1)", String(format: "%.2f", result.p50), result.perRound))
            lines.append(("save against floor request + raw upsert", String(format: "%.2f×", saved / (result.p50 + raw)), ""))
        }

        let zones = { (token: String?) in
            JSONWriter.encode(["zones": [["zoneID": ["zoneName": "_defaultZone"], "syncToken": token.map(JSONValue.string) ?? .null]]])
        }
        for scope in ["private", "public"] {
            var request = HTTPClientRequest(url: self.url(scope, "zones/list", web: scope == "private"))
            request.method = .GET
            let response = try await http.execute(request, timeout: .seconds(30))
            if let next = response.headers.first(name: "X-Apple-CloudKit-Web-Auth-Token") { self.webToken = next }
            let reply = try JSONValue.parse(try await response.body.collect(upTo: 1 << 20).readableBytesView)
            guard let token = reply["zones"]?[0]?["syncToken"]?.stringValue else { throw BenchError("zones/list failed: \(reply)") }
            result = try await self.measure(client, logger: logger) { bench, _ in
                try await bench.send(http, scope, "changes/zone", zones(token), web: scope == "private")
            }
            lines.append(("empty poll: changes/zone, \(scope)", String(format: "%.2f", result.p50), result.perRound))
        }
        print("hot path, one client, \(self.rounds) requests each")
        print(Benchmark.pad("request", 44) + Benchmark.pad("p50 ms", 18) + "per request (PostgreSQL's counters)")
        for (name, p50, counts) in lines { print(Benchmark.pad(name, 44) + Benchmark.pad(p50, 18) + counts) }
    }
}
