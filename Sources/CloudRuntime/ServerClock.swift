import CloudCore

/// Where the server reads the time and waits: the system clock when serving, a clock the test moves in tests, so
/// token grace periods, URL lifetimes and deadlines are tested without sleeping.
public struct ServerClock: Sendable {
    private let readNow: @Sendable () -> Int64
    private let wait: @Sendable (Duration) async throws -> Void
    /// The database deadlines measured on this clock.
    let deadlines = DeadlineTicker()

    public init(now: @escaping @Sendable () -> Int64, sleep: @escaping @Sendable (Duration) async throws -> Void) {
        self.readNow = now
        self.wait = sleep
    }

    /// The wall clock and `Task.sleep`.
    public static let system = ServerClock(now: { Timestamp.now }, sleep: { try await Task.sleep(for: $0) })

    /// Now, in milliseconds since 1970.
    public var now: Int64 { self.readNow() }

    /// Waits `duration` of this clock's time; throws `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws { try await self.wait(duration) }
}

extension Duration {
    /// Whole milliseconds, for arithmetic with timestamps.
    public var milliseconds: Int64 { self.components.seconds * 1000 + self.components.attoseconds / 1_000_000_000_000_000 }
    public var microseconds: Int64 { self.components.seconds * 1_000_000 + self.components.attoseconds / 1_000_000_000_000 }
}
