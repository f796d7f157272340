import CloudCore
import CloudRuntime
import Foundation
import Synchronization

/// Requests of the last hour per endpoint family, minute by minute, for the console's overview: how many, how many
/// failed (4xx, 5xx) and a latency histogram the p99 is read from. In this process's memory: each process of a
/// cluster counts its own (Prometheus' `/metrics` is the place to sum them).
final class RequestStatistics: Sendable {
    /// One family's requests in one minute.
    struct Tally: Sendable {
        var requests = 0
        var clientErrors = 0
        var serverErrors = 0
        /// Durations by bucket: bucket i holds those up to `bucketBound(i)`.
        var buckets = [Int](repeating: 0, count: RequestStatistics.bucketCount)

        mutating func count(status: Int, bucket: Int) {
            self.requests += 1
            if status >= 500 { self.serverErrors += 1 } else if status >= 400 { self.clientErrors += 1 }
            self.buckets[bucket] += 1
        }

        mutating func add(_ other: Tally) {
            self.requests += other.requests
            self.clientErrors += other.clientErrors
            self.serverErrors += other.serverErrors
            for index in self.buckets.indices { self.buckets[index] += other.buckets[index] }
        }

        /// The duration 99 % of the requests stayed within, to the histogram's resolution (about 19 %).
        var p99Microseconds: Int64 {
            let wanted = (self.requests * 99 + 99) / 100
            var seen = 0
            for (index, count) in self.buckets.enumerated() {
                seen += count
                if seen >= wanted, seen > 0 { return RequestStatistics.bucketBound(index) }
            }
            return 0
        }
    }

    static let bucketCount = 64
    /// 100 µs times 2^(i/4): 64 buckets reach about 1.6 minutes.
    static func bucketBound(_ index: Int) -> Int64 { Int64(100 * pow(2, Double(index) / 4)) }
    static func bucket(microseconds: Int64) -> Int {
        guard microseconds > 100 else { return 0 }
        return min(Self.bucketCount - 1, Int((log2(Double(microseconds) / 100) * 4).rounded(.up)))
    }

    /// Families by the first path component, or by the operation under `/database/1/…/{database}/`.
    static let databaseFamilies: Set<String> = [
        "records", "changes", "zones", "assets", "subscriptions", "users", "tokens", "canonical", "notifications",
    ]
    static func family(ofPath path: String) -> String {
        let parts = path.split(separator: "/", maxSplits: 6)
        guard let first = parts.first else { return "other" }
        switch first {
        case "database":
            // A long poll's time is how long nothing changed, not how fast it was served: waits are their own family.
            if parts.count > 6, parts[5] == "changes", parts[6].hasPrefix("wait") { return "waits" }
            if parts.count > 5, Self.databaseFamilies.contains(String(parts[5])) { return String(parts[5]) }
            return "other"
        case "device": return "tokens"
        case "webcourier": return "courier"
        case "assets", "console", "signin": return String(first)
        case "health", "ready", "metrics": return "operations"
        default: return "other"
        }
    }

    private let clock: ServerClock
    /// Tallies by minute (milliseconds / 60,000), then family; minutes older than an hour are dropped.
    private let minutes = Mutex<[Int64: [String: Tally]]>([:])

    init(clock: ServerClock) { self.clock = clock }

    func record(path: String, status: Int, microseconds: Int64) {
        let minute = self.clock.now / 60_000
        let family = Self.family(ofPath: path)
        self.minutes.withLock { minutes in
            if minutes[minute] == nil { minutes = minutes.filter { $0.key > minute - 60 } }
            // Changed in place: no copy of the histogram per request.
            minutes[minute, default: [:]][family, default: Tally()].count(status: status, bucket: Self.bucket(microseconds: microseconds))
        }
    }

    /// The last 60 minutes: every family's tally over the hour, and all families' tally per minute, oldest first.
    func lastHour() -> (families: [(family: String, tally: Tally)], perMinute: [Tally]) {
        let now = self.clock.now / 60_000
        let minutes = self.minutes.withLock { $0 }
        var families: [String: Tally] = [:]
        var perMinute = [Tally](repeating: Tally(), count: 60)
        for (minute, tallies) in minutes where minute > now - 60 && minute <= now {
            for (family, tally) in tallies {
                families[family, default: Tally()].add(tally)
                perMinute[Int(minute - (now - 59))].add(tally)
            }
        }
        return (families.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, perMinute)
    }
}
