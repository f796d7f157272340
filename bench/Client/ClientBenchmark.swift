import CloudCore
import CloudSync
import Foundation
import StadiumCloudClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Measures the client SDK against the plain HTTP work it stands for, in one process and one run: the first sync of
/// the canonical data, queueing visits in the local store, pushing them, and pulling them on a second device. The
/// "HTTP only" side sends the same requests through the same URLSession and parses the answers, without the store.
/// See bench/README.md.
@main
struct ClientBenchmark {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let server = environment["BENCH_SERVER"].flatMap(URL.init(string:)), let apiToken = environment["BENCH_API_TOKEN"],
            let account = environment["BENCH_ACCOUNT"], let password = environment["BENCH_PASSWORD"]
        else {
            print("run bench/client.sh, which starts PostgreSQL and the server and sets BENCH_* variables")
            return
        }
        let visits = Int(environment["BENCH_VISITS"] ?? "") ?? 2000
        let folder = NSTemporaryDirectory() + "stadiumcloud-client-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let endpoint = ServerEndpoint(baseURL: server, container: "iCloud.com.sportstime.bench", apiToken: apiToken)
        var rows: [(String, String, String, String)] = []

        // First sync of canonical data: a new store each time, best of three; against paging changes/zone.
        var firstSync = Duration.seconds(1000)
        var firstHTTP = Duration.seconds(1000)
        var canonical = 0
        for run in 0..<3 {
            let client = try StadiumCloudClient(storePath: "\(folder)/first\(run).sqlite", endpoint: endpoint)
            firstSync = min(firstSync, try await Self.time { canonical = try await client.sync().fetched })
            let http = Self.service(endpoint)
            firstHTTP = min(firstHTTP, try await Self.time { _ = try await Self.pullAll(http, .public) })
        }
        rows.append(
            (
                "first sync, \(canonical) canonical records (rec/s)", Self.rate(canonical, firstSync), Self.rate(canonical, firstHTTP),
                Self.ratio(firstHTTP, firstSync)
            ))

        // Queue visits on the phone (one local transaction each, as the app makes them).
        let phone = try StadiumCloudClient(storePath: "\(folder)/phone.sqlite", endpoint: endpoint)
        try await phone.signIn(accountName: account, password: password)
        try await phone.sync()
        let stadiums = try phone.stadiums().map(\.id)
        let queue = try await Self.time {
            for index in 0..<visits {
                try phone.addVisit(
                    stadiumID: stadiums[index % stadiums.count], date: 1_600_000_000_000 + Int64(index) * 60_000, notes: "visit \(index)")
            }
        }
        rows.append(("queue \(visits) visits locally (visits/s)", Self.rate(visits, queue), "-", "-"))

        // Push them: records/modify in batches of 200 with Idempotency-Key, answers applied to the store; against
        // the same batches of creates sent by plain HTTP.
        let push = try await Self.time { _ = try await phone.sync() }
        let http = Self.service(endpoint)
        _ = try await http.signIn(accountName: account, password: password)
        let bodies = (0..<(visits / 200)).map { batch in
            JSONValue.object([
                "operations": .array(
                    (0..<200).map { index in
                        [
                            "operationType": "create",
                            "record": [
                                "recordName": .string("raw_\(batch)_\(index)"), "recordType": "StadiumVisit",
                                // The fields addVisit sets, so both sides ask the server for the same work.
                                "fields": [
                                    "stadium": [
                                        "type": "REFERENCE", "value": ["recordName": .string(stadiums[index % stadiums.count]), "action": "NONE"],
                                    ],
                                    "visitDate": ["type": "TIMESTAMP", "value": .int(1_600_000_000_000 + Int64(index) * 60_000)],
                                    "visitType": ["type": "STRING", "value": "game"],
                                    "stadiumNameAtVisit": ["type": "STRING", "value": "Some Park"],
                                    "notes": ["type": "STRING", "value": .string("visit \(index)")],
                                ],
                            ],
                        ]
                    })
            ])
        }
        let pushHTTP = try await Self.time { for body in bodies { _ = try await http.call(.private, "records/modify", body) } }
        rows.append(
            (
                "push \(visits) visits, 200 per batch (rec/s)", Self.rate(visits, push), Self.rate(bodies.count * 200, pushHTTP),
                Self.ratio(pushHTTP * (Double(visits) / Double(bodies.count * 200)), push)
            ))

        // Pull everything on a second device: the phone's visits and the plain-HTTP ones.
        let tablet = try StadiumCloudClient(storePath: "\(folder)/tablet.sqlite", endpoint: endpoint)
        try await tablet.sync()  // canonical data first (signed out: public only), so the private pull is measured alone
        try await tablet.signIn(accountName: account, password: password)
        var pulled = 0
        let pull = try await Self.time { pulled = try await tablet.sync().fetched }
        var pulledHTTP = 0
        let pullHTTP = try await Self.time { pulledHTTP = try await Self.pullAll(http, .private) }
        rows.append(
            (
                "pull \(pulled) visits on a second device (rec/s)", Self.rate(pulled, pull), Self.rate(pulledHTTP, pullHTTP),
                Self.ratio(pullHTTP * (Double(pulled) / Double(max(pulledHTTP, 1))), pull)
            ))

        print("\nStadiumCloud client SDK benchmark (release build, loopback, one 2-core machine)")
        print(Self.pad("measure", 52) + Self.pad("SDK", 12) + Self.pad("HTTP only", 12) + "SDK/HTTP")
        for row in rows { print(Self.pad(row.0, 52) + Self.pad(row.1, 12) + Self.pad(row.2, 12) + row.3) }
    }

    /// A service with its own in-memory session, for the plain-HTTP side.
    static func service(_ endpoint: ServerEndpoint) -> CloudKitWebService {
        CloudKitWebService(endpoint: endpoint, tokens: MemoryTokens(), deviceID: "bench-http")
    }

    /// Pages `changes/zone` on the default zone from no token to the end; answers the records seen.
    static func pullAll(_ http: CloudKitWebService, _ scope: DatabaseScope) async throws -> Int {
        var token: String?
        var count = 0
        while true {
            var zone: [String: JSONValue] = ["zoneID": ["zoneName": .string(defaultZoneName)], "resultsLimit": 200]
            if let token { zone["syncToken"] = .string(token) }
            let answer = try await http.call(scope, "changes/zone", ["zones": [.object(zone)]])
            count += answer["zones"]?[0]?["records"]?.arrayValue?.count ?? 0
            token = answer["zones"]?[0]?["syncToken"]?.stringValue
            if answer["zones"]?[0]?["moreComing"]?.boolValue != true { return count }
        }
    }

    static func time(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Void) async throws -> Duration {
        let start = ContinuousClock.now
        try await body()
        return ContinuousClock.now - start
    }

    static func seconds(_ duration: Duration) -> Double { Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18 }
    static func rate(_ count: Int, _ duration: Duration) -> String { String(format: "%.0f", Double(count) / Self.seconds(duration)) }
    /// Throughput of the SDK as a share of plain HTTP's.
    static func ratio(_ http: Duration, _ sdk: Duration) -> String { String(format: "%.0f %%", Self.seconds(http) / Self.seconds(sdk) * 100) }
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

/// A session kept in memory.
final class MemoryTokens: WebAuthTokenKeeper, @unchecked Sendable {
    let lock = NSLock()
    var token: String?
    func webAuthToken() throws -> String? { self.lock.withLock { self.token } }
    func setWebAuthToken(_ token: String?) throws { self.lock.withLock { self.token = token } }
}
