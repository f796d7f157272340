import CloudCore
import Synchronization

/// Runs `body`, or gives up with TRY_AGAIN_LATER after `limit`. While PostgreSQL is away a query waits for a
/// connection without end (PostgresNIO's pool has no lease timeout), and a query caught by a database crash has
/// been seen never to finish; the answer must wait for neither. On timeout `body` is cancelled and left to end
/// on its own; a write it was making either committed before or rolls back. The wait is `clock`'s, so tests
/// decide when the deadline passes.
public func withDatabaseDeadline<T: Sendable>(
    _ limit: Duration, clock: ServerClock = .system, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.continuation.withLock { $0 = continuation }
            // One ticker per clock watches every deadline: a timer per request cost more than an empty poll's query.
            let deadline = clock.deadlines.add(at: clock.now + limit.milliseconds, clock: clock) {
                race.work.withLock { $0?.cancel() }
                race.finish(
                    .failure(
                        CloudError(
                            .tryAgainLater, "the database did not answer within \(limit.components.seconds) s; retry shortly", retryAfter: 2)))
            }
            race.work.withLock {
                $0 = Task {
                    let result: Result<T, any Error>
                    do { result = .success(try await body()) } catch { result = .failure(error) }
                    clock.deadlines.remove(deadline)
                    race.finish(result)
                }
            }
        }
    } onCancel: {
        race.work.withLock { $0?.cancel() }
    }
}

/// The deadlines of one clock and the one task that waits for them: it runs while any is pending, waking when the
/// earliest is due (at least every 250 ms, so a deadline added meanwhile is late by at most that).
final class DeadlineTicker: Sendable {
    private struct State {
        var pending: [Int: (at: Int64, expire: @Sendable () -> Void)] = [:]
        var nextID = 0
        var running = false
    }

    private let state = Mutex(State())

    init() {}

    /// Calls `expire` once `clock` reaches `at` (ms), unless `remove` comes first.
    func add(at: Int64, clock: ServerClock, expire: @escaping @Sendable () -> Void) -> Int {
        let (id, start) = self.state.withLock { state in
            state.nextID += 1
            state.pending[state.nextID] = (at, expire)
            defer { state.running = true }
            return (state.nextID, !state.running)
        }
        if start { Task { await self.run(clock) } }
        return id
    }

    func remove(_ id: Int) {
        _ = self.state.withLock { $0.pending.removeValue(forKey: id) }
    }

    private func run(_ clock: ServerClock) async {
        while true {
            let now = clock.now
            let (due, earliest): ([@Sendable () -> Void], Int64?) = self.state.withLock { state in
                let due = state.pending.filter { $0.value.at <= now }
                for id in due.keys { state.pending[id] = nil }
                let earliest = state.pending.values.map(\.at).min()
                if earliest == nil { state.running = false }
                return (due.values.map(\.expire), earliest)
            }
            for expire in due { expire() }
            guard let earliest else { return }
            try? await clock.sleep(for: .milliseconds(min(max(earliest - now, 1), 250)))
        }
    }
}

/// Whichever of the work and the timer ends first answers; the other finds the continuation gone.
private final class DeadlineRace<T: Sendable>: Sendable {
    let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)
    let work = Mutex<Task<Void, Never>?>(nil)

    func finish(_ result: Result<T, any Error>) {
        self.continuation.withLock { $0.take() }?.resume(with: result)
    }
}
