import CloudCore
import CloudRuntime
import Metrics
import Synchronization

/// A provider's rate limit and failures (docs/FEEDS.md): requests are spaced to its rate; an unofficial provider
/// that fails 3 times within an hour (a scraped one 2) is disabled for a day, an official one is never disabled. The
/// failures and the rest (`Durable`) are kept in PostgreSQL by the poller, so a restart or a takeover does not forget them.
final class ProviderHealth: Sendable {
    /// What outlives the process that polls.
    struct Durable: Equatable {
        var failures: [Int64]
        var disabledUntil: Int64?

        var json: String {
            JSONWriter.encode(["failures": .array(self.failures.map { .int($0) }), "disabledUntil": self.disabledUntil.map { .int($0) } ?? .null])
        }

        init(failures: [Int64], disabledUntil: Int64?) { (self.failures, self.disabledUntil) = (failures, disabledUntil) }

        init?(json: String) {
            guard let value = try? JSONValue.parse(Array(json.utf8)), let failures = value["failures"]?.arrayValue?.compactMap(\.int64Value) else {
                return nil
            }
            self.init(failures: failures, disabledUntil: value["disabledUntil"]?.int64Value)
        }
    }

    struct State {
        var nextSlot: Int64 = 0
        var failures: [Int64] = []
        var disabledUntil: Int64?
        var requests = 0
        var lastOutcome = "not asked yet"
    }

    let name: String
    let trust: ProviderTrust
    private let spacingMs: Int64
    private let state = Mutex(State())
    private let enabledGauge: Gauge

    init(_ provider: any ScoreProvider) {
        self.name = provider.name
        self.trust = provider.trust
        self.spacingMs = Int64((1000 / provider.requestsPerSecond).rounded(.up))
        self.enabledGauge = Gauge(label: "stadiumcloud_feed_provider_enabled", dimensions: [("provider", provider.name)])
        self.enabledGauge.record(1)
    }

    /// The time (ms) this request may be sent: the provider's next free slot, reserved.
    func reserveSlot(now: Int64) -> Int64 {
        self.state.withLock { state in
            let slot = max(now, state.nextSlot)
            state.nextSlot = slot + self.spacingMs
            state.requests += 1
            return slot
        }
    }

    /// When the provider's next free slot is, if it is after `now` (requests reserved it): nil when it is free now.
    func nextFreeSlot(after now: Int64) -> Int64? {
        self.state.withLock { $0.nextSlot > now ? $0.nextSlot : nil }
    }

    func isEnabled(now: Int64) -> Bool {
        self.state.withLock { state in
            if let until = state.disabledUntil, now >= until {
                state.disabledUntil = nil
                state.failures = []
                self.enabledGauge.record(1)
            }
            return state.disabledUntil == nil
        }
    }

    func succeeded(_ outcome: String) {
        self.state.withLock { $0.lastOutcome = outcome }
        Counter(label: "stadiumcloud_feed_requests_total", dimensions: [("provider", self.name), ("outcome", "ok")]).increment()
    }

    /// Counts a failure; true when it disabled the provider.
    @discardableResult
    func failed(_ reason: String, now: Int64, window: Duration, disabledFor: Duration) -> Bool {
        Counter(label: "stadiumcloud_feed_requests_total", dimensions: [("provider", self.name), ("outcome", "failed")]).increment()
        return self.state.withLock { state in
            state.lastOutcome = "failed: " + reason
            state.failures = state.failures.filter { $0 > now - window.milliseconds } + [now]
            guard let limit = self.trust.failuresBeforeDisabling, state.failures.count >= limit, state.disabledUntil == nil else { return false }
            state.disabledUntil = now + disabledFor.milliseconds
            self.enabledGauge.record(0)
            return true
        }
    }

    var snapshot: State { self.state.withLock { $0 } }

    var durable: Durable { self.state.withLock { Durable(failures: $0.failures, disabledUntil: $0.disabledUntil) } }

    func restore(_ durable: Durable) {
        self.state.withLock { ($0.failures, $0.disabledUntil) = (durable.failures, durable.disabledUntil) }
        self.enabledGauge.record(durable.disabledUntil == nil ? 1 : 0)
    }
}
