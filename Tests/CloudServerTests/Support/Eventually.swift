import CloudRuntime

/// Returns once `condition` holds, looking again each time `changes` says what it looks at changed: never on a timer.
/// A condition that never comes true is ended by its suite's time limit (`.timeLimit`), which cancels the wait: an
/// unbounded wait for a listener once held a CI run until its 90 minutes were up.
func eventually(_ what: @autoclosure () -> String, on changes: StateSignal, _ condition: () async throws -> Bool) async throws {
    while true {
        let seen = changes.generation
        if try await condition() { return }
        await changes.changed(since: seen)
        if Task.isCancelled { throw WaitedTooLong(description: "cancelled while waiting for \(what())") }
    }
}

struct WaitedTooLong: Error, CustomStringConvertible {
    var description: String
}

/// Suspends until the task is cancelled, then throws `CancellationError`: a request that never ends by itself.
func suspendUntilCancelled() async throws {
    let never = AsyncStream<Never>.makeStream()
    defer { never.continuation.finish() }
    for await _ in never.stream {}
    throw CancellationError()
}
