import CloudCore
import CloudRuntime
import Crypto
import Logging
import Metrics
import Synchronization

/// The buckets a person's requests take, named in one place (erasing an account deletes them).
enum RateLimitKeys {
    static func account(_ id: Int64) -> String { "account:\(id)" }
    static func publicWrites(_ id: Int64) -> String { "public-writes:\(id)" }
    /// By a hash of the name: names that exist nowhere are throttled too, and no bucket row names a person.
    static func signIn(_ name: String) -> String { "signin:" + SHA256.hash(data: Array(name.utf8)).prefix(12).hexString }
    static func of(_ account: Account) -> [String] { [Self.account(account.id), Self.publicWrites(account.id), Self.signIn(account.name)] }
}

/// Token buckets, one per key (an API token, an account, a server key, a sign-in name). Each request is decided
/// in memory; with `share`, the requests counted here are added to buckets in the database within `interval`,
/// and the levels that come back (every process's requests taken) replace the local ones, so an account's budget
/// is the same whatever process it reaches. Between two shares a process may let through at most one burst more
/// than the shared budget (docs/SCALING.md).
final class RateLimiter: Sendable {
    /// Takes the counts from the shared buckets and answers their levels (`CredentialStore.takeFromSharedBuckets`).
    typealias Share = @Sendable ([(key: String, count: Int, limit: (perSecond: Double, burst: Double))]) async throws -> [String: Double]

    private struct Bucket {
        var tokens: Double
        /// Milliseconds since 1970, on the server's clock.
        var updated: Int64
        var limit: RateLimit
        /// Requests taken here and not yet shared.
        var unshared = 0
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
    }

    private let state = Mutex(State())
    private let clock: ServerClock
    private let share: Share?
    /// Shares the counts `interval` after the first unshared one (nil interval: only `shareNow`, for tests).
    private let sharing: DelayedFlush
    private let logger = Logger(label: "stadiumcloud.ratelimit")
    private let shareTimer = Metrics.Timer(label: "stadiumcloud_rate_limit_share_seconds")

    init(share: Share? = nil, interval: Duration? = .milliseconds(250), clock: ServerClock) {
        (self.share, self.clock) = (share, clock)
        self.sharing = DelayedFlush(after: interval, clock: clock)
    }

    /// Takes one request from `key`'s bucket, or throws THROTTLED with the seconds until one is available.
    func take(_ key: String, _ limit: RateLimit, what: String) throws {
        let now = self.clock.now
        let wait: Double? = self.state.withLock { state in
            if state.buckets.count > 100_000 { Self.dropFull(&state.buckets, now: now) }
            var bucket = state.buckets[key] ?? Bucket(tokens: limit.burst, updated: now, limit: limit)
            Self.refill(&bucket, now: now)
            bucket.limit = limit
            defer { state.buckets[key] = bucket }
            guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / limit.perSecond }
            bucket.tokens -= 1
            if self.share != nil { bucket.unshared += 1 }
            return nil
        }
        guard let wait else {
            if self.share != nil { self.sharing.request { await self.shareNow() } }
            return
        }
        // A rate of 0 makes the wait infinite: cap it at a day rather than trap converting it.
        let retryAfter = max(1, Int(min(wait, 86_400).rounded(.up)))
        throw CloudError(.throttled, "too many requests for this \(what); retry after \(retryAfter) s", retryAfter: retryAfter)
    }

    /// Forgets these buckets here, counts not yet shared included (an erased account's).
    func forget(_ keys: [String]) {
        self.state.withLock { state in for key in keys { state.buckets[key] = nil } }
    }

    /// Adds the requests counted since the last share to the shared buckets and takes their levels back, less what
    /// this process took meanwhile. When the database is away the counts wait for the next share.
    func shareNow() async {
        guard let share else { return }
        let counts = self.state.withLock { state in
            var counts: [(key: String, count: Int, limit: (perSecond: Double, burst: Double))] = []
            for (key, bucket) in state.buckets where bucket.unshared > 0 {
                counts.append((key, bucket.unshared, (bucket.limit.perSecond, bucket.limit.burst)))
                state.buckets[key]!.unshared = 0
            }
            return counts
        }
        guard !counts.isEmpty else { return }
        let started = ContinuousClock.now
        do {
            let levels = try await share(counts)
            self.shareTimer.record(duration: ContinuousClock.now - started)
            let now = self.clock.now
            self.state.withLock { state in
                for (key, level) in levels where state.buckets[key] != nil {
                    state.buckets[key]!.tokens = level - Double(state.buckets[key]!.unshared)
                    state.buckets[key]!.updated = now
                }
            }
        } catch {
            self.logger.debug("rate limit counts not shared yet", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            self.state.withLock { state in
                for count in counts { state.buckets[count.key]?.unshared += count.count }
            }
        }
    }

    private static func refill(_ bucket: inout Bucket, now: Int64) {
        // A wall clock set back refills nothing rather than draining the bucket.
        let seconds = Double(max(0, now - bucket.updated)) / 1000
        bucket.tokens = min(bucket.limit.burst, bucket.tokens + seconds * bucket.limit.perSecond)
        bucket.updated = now
    }

    /// Forgets buckets that would be full by now and have nothing to share (memory stays bounded under many keys).
    private static func dropFull(_ buckets: inout [String: Bucket], now: Int64) {
        buckets = buckets.filter { _, bucket in
            bucket.unshared > 0 || Double(now - bucket.updated) < 1000 * (bucket.limit.burst - bucket.tokens) / max(bucket.limit.perSecond, 0.001)
        }
    }
}
