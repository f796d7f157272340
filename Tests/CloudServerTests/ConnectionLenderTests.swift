import CloudCore
@testable import CloudPostgres
import Foundation
import Testing

/// `ConnectionLender`: requests borrow held connections; a closed one is replaced, a cancelled wait leaves nothing behind.
@Suite struct ConnectionLenderTests {
    @Test func requestsShareHeldConnectionsAndOutliveTheirLoss() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        try await withDatabasePool(url, maximumConnections: 3, logger: TestDatabase.logger) { pool in
            let backend = { @Sendable () async throws -> Int32 in
                try await pool.reading { connection in
                    var pid: Int32 = 0
                    for try await value in try await connection.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) {
                        pid = value
                    }
                    try await Task.sleep(for: .milliseconds(5))
                    return pid
                }
            }
            let pids = try await withThrowingTaskGroup(of: Int32.self) { group in
                for _ in 0..<40 { group.addTask { try await backend() } }
                return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
            }
            #expect(pids.count <= 3, "at most the maximum is held: \(pids)")
            // PostgreSQL ends those backends (a restart does the same): the next requests get new ones.
            try await pool.query("SELECT pg_terminate_backend(pid) FROM unnest(\(Array(pids))::int4[]) AS pid", logger: TestDatabase.logger)
            var answered: Int32?
            for _ in 0..<50 where answered == nil {
                answered = try? await backend()
                if answered == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let fresh = try #require(answered)
            #expect(!pids.contains(fresh))
        }
    }

    @Test func aWaitCutShortByItsDeadlineLeavesNothingBehind() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        try await withDatabasePool(url, maximumConnections: 1, logger: TestDatabase.logger) { pool in
            let (starts, started) = AsyncStream.makeStream(of: Void.self)
            let (releases, release) = AsyncStream.makeStream(of: Void.self)
            let busy = Task {
                try await pool.reading { _ in
                    started.yield()
                    for await _ in releases { break }
                }
            }
            for await _ in starts { break }
            // The one connection is busy: a second request waits for it until its deadline.
            let time = ManualClock()
            let waiting = Task { try await withDatabaseDeadline(.seconds(3), clock: time.clock) { try await pool.reading { _ in 1 } } }
            try await time.waitForSleepers(1)
            time.advance(by: .seconds(3))
            await #expect(throws: CloudError.self) { try await waiting.value }
            release.yield()
            try await busy.value
            // The connection went back to the lender, not to the request that gave up.
            #expect(try await pool.reading { _ in 2 } == 2)
        }
    }
}
