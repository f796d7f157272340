import CloudCore
@testable import CloudHTTP
@testable import CloudPostgres
import CloudRuntime
import _ConnectionPoolModule
import Testing

/// The deadline must answer even when the work ignores cancellation (as a query caught by a database crash did).
@Suite(.bounded) struct DatabaseDeadlineTests {
    /// Regression: PostgresNIO's circuit breaker error was answered as a 500.
    @Test func aPoolThatGaveUpConnectingIsTryAgainLater() async throws {
        await #expect {
            try await translatingDatabaseErrors { throw ConnectionPoolError.connectionCreationCircuitBreakerTripped }
        } throws: { error in
            (error as? CloudError)?.code == .tryAgainLater && (error as? CloudError)?.retryAfter != nil
        }
    }

    @Test func answersTryAgainLaterWhenTheWorkNeverEnds() async throws {
        let time = ManualClock()
        let (release, finish) = AsyncStream<Void>.makeStream()
        let answer = Task {
            try await withDatabaseDeadline(.seconds(10), clock: time.clock) { () async throws -> Int in
                // An unstructured task does not inherit cancellation: a stand-in for work that never notices it.
                await Task { for await _ in release {} }.value
                return 1
            }
        }
        try await time.waitForSleepers(1)
        time.advance(by: .seconds(10))
        await #expect(throws: CloudError.self) { _ = try await answer.value }
        do { _ = try await answer.value } catch let error as CloudError { #expect(error.code == .tryAgainLater) }
        finish.finish()
    }

    @Test func passesResultsAndErrorsThrough() async throws {
        #expect(try await withDatabaseDeadline(.seconds(5)) { 42 } == 42)
        await #expect(throws: CloudError.notFound("x")) {
            try await withDatabaseDeadline(.seconds(5)) { () async throws -> Int in throw CloudError.notFound("x") }
        }
    }
}
