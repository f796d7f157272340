/// Waits, polling every few milliseconds, until `condition` holds; fails the test after `limit` instead of waiting
/// forever (an unbounded wait for a listener once held a CI run until its 90 minutes were up).
func eventually(
    _ what: @autoclosure () -> String, within limit: Duration = .seconds(60), _ condition: () -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while !condition() {
        guard clock.now < deadline else { throw WaitedTooLong(description: "waited \(limit) for \(what())") }
        try await Task.sleep(for: .milliseconds(2))
    }
}

struct WaitedTooLong: Error, CustomStringConvertible {
    var description: String
}
