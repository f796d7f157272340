import Synchronization

/// Batches writes in time: the first `request` starts a flush `interval` later, and every request made before it
/// runs joins that one flush. How the rate limiter and web auth token uses reach the database a few times a
/// second whatever the request rate. With a nil interval nothing flushes on its own (tests flush by hand).
public final class DelayedFlush: Sendable {
    private let interval: Duration?
    private let clock: ServerClock
    private let scheduled = Mutex(false)

    public init(after interval: Duration?, clock: ServerClock) { (self.interval, self.clock) = (interval, clock) }

    public func request(_ flush: @escaping @Sendable () async -> Void) {
        guard let interval else { return }
        let start = self.scheduled.withLock { scheduled in
            defer { scheduled = true }
            return !scheduled
        }
        guard start else { return }
        Task {
            try? await self.clock.sleep(for: interval)
            // Cleared before flushing, so what is noted during the flush schedules the next one.
            self.scheduled.withLock { $0 = false }
            await flush()
        }
    }
}
