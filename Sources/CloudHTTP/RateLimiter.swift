import CloudCore
import Synchronization

/// Token buckets in memory, one per key (an API token, an account, a server key, a sign-in name).
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[String: Bucket]>([:])

    /// Takes one request from `key`'s bucket, or throws THROTTLED with the seconds until one is available.
    func take(_ key: String, _ limit: RateLimit, what: String) throws {
        let now = ContinuousClock.now
        let wait: Double? = self.buckets.withLock { buckets in
            if buckets.count > 100_000 { Self.dropFull(&buckets, now: now, limit: limit) }
            var bucket = buckets[key] ?? Bucket(tokens: limit.burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(limit.burst, bucket.tokens + seconds * limit.perSecond)
            bucket.updated = now
            defer { buckets[key] = bucket }
            guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / limit.perSecond }
            bucket.tokens -= 1
            return nil
        }
        if let wait {
            // A rate of 0 makes the wait infinite: cap it at a day rather than trap converting it.
            let retryAfter = max(1, Int(min(wait, 86_400).rounded(.up)))
            throw CloudError(.throttled, "too many requests for this \(what); retry after \(retryAfter) s", retryAfter: retryAfter)
        }
    }

    /// Forgets buckets that would be full by now anyway (memory stays bounded under many keys).
    private static func dropFull(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant, limit: RateLimit) {
        let refill = Duration.seconds(limit.burst / max(limit.perSecond, 0.001))
        buckets = buckets.filter { now - $0.value.updated < refill }
    }
}
