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
            let timer = Task {
                do { try await clock.sleep(for: limit) } catch { return }  // cancelled: the work answered first
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
                    timer.cancel()
                    race.finish(result)
                }
            }
        }
    } onCancel: {
        race.work.withLock { $0?.cancel() }
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
