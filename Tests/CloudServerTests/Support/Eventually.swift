/// Waits, polling every few milliseconds, until `condition` holds; fails the test after `limit` instead of waiting
/// forever (an unbounded wait for a listener once held a CI run until its 90 minutes were up). The one place a test
/// polls: for something another task or process does, never for time to pass.
func eventually(
    _ what: @autoclosure () -> String, within limit: Duration = .seconds(60), _ condition: () async throws -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while try await !condition() {
        guard clock.now < deadline else { throw WaitedTooLong(description: "waited \(limit) for \(what())") }
        try await Task.sleep(for: .milliseconds(2))
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
