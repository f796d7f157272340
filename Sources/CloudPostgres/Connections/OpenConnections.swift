import CloudCore
import CloudRuntime
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The connections requests borrow: opened on demand up to a maximum, kept open, and handed from one request straight
/// to the next; one that closes (PostgreSQL restarted) is dropped, and the next request that needs it opens another.
///
/// Why not PostgresNIO's pool (`PostgresClient`) for requests: in 1.33 it starts a keep-alive timer and an idle-timeout
/// timer each time a connection goes back to it, and on Linux a cancelled `Task.sleep` stays in dispatch's timer heap
/// until its deadline. A server answering 10,000 requests a second piled up some 600,000 of them (350 MB, a third of a
/// core burnt while idle, every request slower run after run: bench/HISTORY.md). Keeping
/// that pool full avoids the idle timer but trips a precondition in it when PostgreSQL goes away. Here a lent
/// connection costs one lock to borrow and one to give back, and nothing waits on a timer. A connection that cannot be
/// opened fails the request at once (TRY_AGAIN_LATER) instead of backing off: when PostgreSQL comes back, the next
/// request connects.
final class OpenConnections: Sendable {
    /// Opens one connection; `id` names it in PostgresNIO's logs.
    typealias Connect = @Sendable (_ id: Int) async throws -> PostgresConnection

    private struct State {
        var idle: [PostgresConnection] = []
        /// Lent connections by id; a slot each, like the idle ones and those being opened.
        var lent: Set<Int> = []
        /// Slots taken: idle, lent and being opened. Never above `maximum`.
        var slots = 0
        /// Requests waiting for a connection, first come first served. Resumed with a connection, or with nil: a slot
        /// is theirs, to open one.
        var waiting: [(id: Int, continuation: CheckedContinuation<PostgresConnection?, any Error>)] = []
        var nextID = 0
        var closed = false

        /// The most recently used idle connection that is still open, now lent; closed ones are dropped on the way.
        mutating func lendIdle() -> PostgresConnection? {
            while let connection = self.idle.popLast() {
                if connection.isClosed {
                    self.slots -= 1
                    continue
                }
                self.lent.insert(connection.id)
                return connection
            }
            return nil
        }
    }

    let maximum: Int
    private let connect: Connect
    private let logger: Logger
    private let state = Mutex(State())

    init(maximum: Int, logger: Logger, connect: @escaping Connect) {
        precondition(maximum > 0)
        (self.maximum, self.logger, self.connect) = (maximum, logger, connect)
    }

    /// Connections to `url`, each of which confirms the database's history before its first use. A long read on one
    /// may wait for its reader, so each reads only when asked (`ReadsOnlyWhenAsked`).
    convenience init(_ url: DatabaseURL, maximum: Int, connectTimeout: Duration = .seconds(5), history: DatabaseHistory, logger: Logger) {
        var configuration = url.connectionConfiguration
        configuration.options.connectTimeout = .init(connectTimeout)
        let fixed = configuration
        self.init(maximum: maximum, logger: logger) { id in
            let connection = try await PostgresConnection.connectReadingOnlyWhenAsked(
                host: url.host, port: url.port, configuration: fixed, id: id, logger: logger)
            do {
                try await history.confirm(on: connection, logger: logger)
            } catch {
                try? await connection.close()
                throw error
            }
            return connection
        }
    }

    /// Runs `body` with a connection, waiting for one while all are lent (cancellable: a request's deadline ends the
    /// wait). TRY_AGAIN_LATER when a connection cannot be opened.
    func withConnection<Result>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        let connection = try await self.borrow()
        defer { self.giveBack(connection) }
        return try await body(connection)
    }

    /// Closes the idle connections and refuses waiting and later requests; lent ones close as they come back.
    func close() {
        let (idle, waiting) = self.state.withLock { state in
            defer { (state.closed, state.idle, state.waiting) = (true, [], []) }
            state.slots -= state.idle.count
            return (state.idle, state.waiting)
        }
        self.countChanges.changed()
        for waiter in waiting { waiter.continuation.resume(throwing: CloudError.databaseUnavailable(retryAfter: 1)) }
        for connection in idle { Self.closeInBackground(connection) }
    }

    /// How many connections are open or being opened, and how many of those are lent (for tests).
    var counts: (slots: Int, lent: Int, idle: Int) { self.state.withLock { ($0.slots, $0.lent.count, $0.idle.count) } }
    /// Requests waiting for a connection (for tests).
    var waitingRequests: Int { self.state.withLock { $0.waiting.count } }
    /// Changed whenever a slot is given up (a connection closed or dropped) or a request starts waiting, for tests.
    let countChanges = StateSignal()

    private enum Ticket {
        case connection(PostgresConnection)
        case slot
        case wait(id: Int)
    }

    private func borrow() async throws -> PostgresConnection {
        let ticket = try self.state.withLock { state -> Ticket in
            if state.closed { throw CloudError.databaseUnavailable(retryAfter: 1) }
            if let connection = state.lendIdle() { return .connection(connection) }
            if state.slots < self.maximum {
                state.slots += 1
                return .slot
            }
            state.nextID += 1
            return .wait(id: state.nextID)
        }
        switch ticket {
        case .connection(let connection): return connection
        case .slot: return try await self.open()
        case .wait(let id):
            if let connection = try await self.wait(id) { return connection }
            return try await self.open()
        }
    }

    private func wait(_ id: Int) async throws -> PostgresConnection? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection?, any Error>) in
                // Looked at again under the lock: a connection or a slot may have come back since `borrow` looked.
                let ready: Result<PostgresConnection?, any Error>? = self.state.withLock { state in
                    if state.closed { return .failure(CloudError.databaseUnavailable(retryAfter: 1)) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let connection = state.lendIdle() { return .success(connection) }
                    if state.slots < self.maximum {
                        state.slots += 1
                        return .success(nil)
                    }
                    state.waiting.append((id, continuation))
                    return nil
                }
                if let ready { continuation.resume(with: ready) } else { self.countChanges.changed() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                state.waiting.firstIndex { $0.id == id }.map { state.waiting.remove(at: $0).continuation }
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Opens a connection in a slot already taken; gives the slot back when that fails.
    private func open() async throws -> PostgresConnection {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let connection: PostgresConnection
        do {
            try Task.checkCancellation()
            connection = try await self.connect(id)
        } catch {
            self.releaseSlot()
            if error is CancellationError { throw error }
            self.logger.warning("cannot connect to PostgreSQL: \(String(reflecting: error))")
            throw CloudError.databaseUnavailable(retryAfter: 1)
        }
        // A connection that closes is dropped at once, lent or idle, so a request stuck on it (PostgresNIO has been seen
        // never to end a query on a connection it closed) holds no slot.
        connection.closeFuture.whenComplete { _ in self.dropClosed(connection) }
        let closed = self.state.withLock { state in
            if state.closed {
                state.slots -= 1
                return true
            }
            state.lent.insert(connection.id)
            return false
        }
        if closed {
            Self.closeInBackground(connection)
            throw CloudError.databaseUnavailable(retryAfter: 1)
        }
        return connection
    }

    /// Hands `connection` to the longest waiting request, or keeps it for the next.
    private func giveBack(_ connection: PostgresConnection) {
        if connection.isClosed { return self.dropClosed(connection) }
        enum Next { case wake(CheckedContinuation<PostgresConnection?, any Error>), keep, close }
        let next = self.state.withLock { state -> Next in
            // Not lent any more: dropped when it closed.
            guard state.lent.remove(connection.id) != nil else { return .keep }
            if state.closed {
                state.slots -= 1
                return .close
            }
            if state.waiting.isEmpty {
                state.idle.append(connection)
                return .keep
            }
            state.lent.insert(connection.id)
            return .wake(state.waiting.removeFirst().continuation)
        }
        switch next {
        case .wake(let waiter): waiter.resume(returning: connection)
        case .keep: break
        case .close: Self.closeInBackground(connection)
        }
    }

    /// Forgets a closed connection, lent or idle, and gives its slot to the longest waiting request.
    private func dropClosed(_ connection: PostgresConnection) {
        let held = self.state.withLock { state in
            if state.lent.remove(connection.id) != nil { return true }
            guard let index = state.idle.firstIndex(where: { $0 === connection }) else { return false }
            state.idle.remove(at: index)
            return true
        }
        if held { self.releaseSlot() }
    }

    /// A slot is free: the longest waiting request opens a connection in it, or nobody does.
    private func releaseSlot() {
        let waiter = self.state.withLock { state -> CheckedContinuation<PostgresConnection?, any Error>? in
            if state.waiting.isEmpty || state.closed {
                state.slots -= 1
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        self.countChanges.changed()
        waiter?.resume(returning: nil)
    }

    /// Closes `connection` without waiting, keeping it alive until it is closed (PostgresNIO asserts that it is).
    private static func closeInBackground(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }
}
