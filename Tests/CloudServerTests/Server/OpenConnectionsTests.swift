import CloudCore
@testable import CloudPostgres
import CloudRuntime
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

/// `OpenConnections`: requests share at most the maximum; a connection PostgreSQL ends is dropped and replaced; a
/// wait cut short and a connection that cannot be opened leave no slot taken.
@Suite(.bounded) struct OpenConnectionsTests {
    /// A command's first query is made once the pool's client runs: PostgresNIO warned "`PostgresClient.run()`
    /// hasn't been called yet" on every CLI command.
    @Test func theFirstQueryOfACommandFindsTheClientRunning() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        let capture = LogCapture()
        for _ in 0..<5 {
            try await PostgresPool(url, maximumConnections: 2, logger: Logger(label: "pool") { _ in capture }).whileRunning { pool in
                try await pool.client.query("SELECT 1", logger: TestDatabase.logger)
            }
        }
        #expect(!capture.text.contains("hasn't been called"), "\(capture.text)")
    }

    @Test func requestsShareKeptConnectionsAndOutliveTheirLoss() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        try await withDatabasePool(url, maximumConnections: 3, logger: TestDatabase.logger) { pool in
            let backend = { @Sendable () async throws -> Int32 in
                try await pool.reading { connection in
                    var pid: Int32 = 0
                    for try await value in try await connection.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) {
                        pid = value
                    }
                    await Task.yield()  // let the other requests ask while this one holds its connection
                    return pid
                }
            }
            let pids = try await withThrowingTaskGroup(of: Int32.self) { group in
                for _ in 0..<40 { group.addTask { try await backend() } }
                return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
            }
            #expect(pids.count <= 3, "at most the maximum is open: \(pids)")
            #expect(pool.connections.counts.lent == 0)
            // PostgreSQL ends those backends (a restart does the same): they are dropped, and the next request opens a
            // new one.
            try await pool.query("SELECT pg_terminate_backend(pid) FROM unnest(\(Array(pids))::int4[]) AS pid", logger: TestDatabase.logger)
            try await eventually("the ended connections are dropped", on: pool.connections.countChanges) { pool.connections.counts.slots == 0 }
            let fresh = try await backend()
            #expect(!pids.contains(fresh))
            #expect(pool.connections.counts == (slots: 1, lent: 0, idle: 1))
        }
    }

    @Test func aConnectionEndedWhileLentGivesItsSlotToAWaitingRequest() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        try await withDatabasePool(url, maximumConnections: 1, logger: TestDatabase.logger) { pool in
            let (pids, gotPID) = AsyncStream.makeStream(of: Int32.self)
            // The one connection is lent to a request that never gives it back by itself (a query PostgresNIO never
            // ends on a connection it closed has been seen): PostgreSQL ends its backend meanwhile.
            let stuck = Task {
                try await pool.reading { connection in
                    for try await pid in try await connection.query("SELECT pg_backend_pid()", logger: TestDatabase.logger).decode(Int32.self) {
                        gotPID.yield(pid)
                    }
                    try await suspendUntilCancelled()
                }
            }
            var pid: Int32 = 0
            for await value in pids {
                pid = value
                break
            }
            let answer = Mutex<Int?>(nil)
            let waiting = Task { try await pool.reading { _ in answer.withLock { $0 = 7 } } }
            try await eventually("a request waits", on: pool.connections.countChanges) { pool.connections.waitingRequests == 1 }
            try await pool.query("SELECT pg_terminate_backend(\(pid))", logger: TestDatabase.logger)
            // Served while the stuck request still holds on.
            try await waiting.value
            #expect(answer.withLock { $0 } == 7)
            stuck.cancel()
            _ = await stuck.result
            #expect(pool.connections.counts == (slots: 1, lent: 0, idle: 1))
        }
    }

    /// PostgreSQL goes away (a restart, a failover) while a long read waits for its reader: the read fails, the
    /// connection's slot is freed, and the process lives. PostgresNIO 1.33 stopped the process there ("How can we
    /// receive a body part, after a channelReadComplete, but no read has been forwarded yet"), as a server whose
    /// PostgreSQL stopped while it warmed its canonical catalog showed.
    @Test func aReadWaitingForItsReaderFailsWhenItsConnectionEnds() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        let relay = try HeldRelay(to: url.port)
        let connections = OpenConnections(maximum: 1, logger: TestDatabase.logger) { id in
            try await PostgresConnection.connectReadingOnlyWhenAsked(
                host: "127.0.0.1", port: relay.port, configuration: url.connectionConfiguration, id: id, logger: TestDatabase.logger)
        }
        let read = await #expect(throws: PSQLError.self) {
            try await connections.withConnection { connection in
                relay.hold()
                async let answer = connection.query("SELECT n FROM generate_series(1, 5000) AS n", logger: TestDatabase.logger)
                // PostgreSQL has sent most of its answer (15 bytes a row); the first 20 kB of it (~1,300 rows, more
                // than the 256 PostgresNIO takes in before it waits for its reader) reach the client.
                try await eventually("PostgreSQL answers", on: relay.heldChanges) { relay.heldBytes > 60_000 }
                relay.release(20_000)
                var rows = try await answer.decode(Int64.self).makeAsyncIterator()
                #expect(try await rows.next() == 1)
                // The reader pauses; the server goes away in the middle of the next rows.
                relay.cut(after: 10_000)
                try await connection.closeFuture.get()
                while try await rows.next() != nil {}
            }
        }
        #expect(read?.code == .serverClosedConnection || read?.code == .connectionError, "\(String(reflecting: read))")
        // Its slot was given back when it closed (before the read failed), not when a request next looked.
        #expect(connections.counts.slots == 0)
        connections.close()
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
            // The connection went back to be kept, not to the request that gave up.
            #expect(try await pool.reading { _ in 2 } == 2)
            #expect(pool.connections.counts == (slots: 1, lent: 0, idle: 1))
        }
    }

    @Test func aConnectionThatCannotBeOpenedIsTryAgainLaterAndFreesItsSlot() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        let failures = Mutex(2)
        let connections = OpenConnections(maximum: 1, logger: TestDatabase.logger) { id in
            if failures.withLock({ failures in
                defer { failures -= 1 }
                return failures > 0
            }) {
                throw Refused()
            }
            return try await PostgresConnection.connect(configuration: url.connectionConfiguration, id: id, logger: TestDatabase.logger)
        }
        for _ in 0..<2 {
            await #expect(throws: CloudError.self) { try await connections.withConnection { _ in () } }
            #expect(connections.counts.slots == 0)
        }
        #expect(try await connections.withConnection { _ in 3 } == 3)
        connections.close()
        #expect(connections.counts.slots == 0)
        await #expect(throws: CloudError.self) { try await connections.withConnection { _ in () } }
    }
}

private struct Refused: Error {}
