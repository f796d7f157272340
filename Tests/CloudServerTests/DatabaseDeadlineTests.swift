import CloudCore
@testable import CloudHTTP
import Testing

/// The deadline must answer even when the work ignores cancellation (as a query caught by a database crash did).
@Suite struct DatabaseDeadlineTests {
    @Test func answersTryAgainLaterWhenTheWorkNeverEnds() async throws {
        let started = ContinuousClock.now
        await #expect(throws: CloudError.self) {
            try await withDatabaseDeadline(.milliseconds(200)) { () async throws -> Int in
                // Sleeps through cancellation: a stand-in for work that never notices it.
                let end = ContinuousClock.now + .seconds(3)
                while ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(50)) }
                return 1
            }
        }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test func passesResultsAndErrorsThrough() async throws {
        #expect(try await withDatabaseDeadline(.seconds(5)) { 42 } == 42)
        await #expect(throws: CloudError.notFound("x")) {
            try await withDatabaseDeadline(.seconds(5)) { () async throws -> Int in throw CloudError.notFound("x") }
        }
    }
}
