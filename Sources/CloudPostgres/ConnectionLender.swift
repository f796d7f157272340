import CloudCore
import PostgresNIO
import Synchronization

/// Lends connections to requests from connections taken out of PostgresNIO's pool once and held, instead of leasing
/// from the pool for every request.
///
/// Why: PostgresNIO 1.33's pool starts a keep-alive timer and an idle-timeout timer each time a connection goes back
/// to it, and on Linux a cancelled `Task.sleep` stays in dispatch's timer heap until its deadline. A server answering
/// 10,000 requests a second piled up some 600,000 of them (350 MB, a third of a core while idle), and the timers cost
/// a third of an empty poll (bench/README.md, "Issue 17, fourth session"). Keeping the pool full instead
/// (`minimumConnections`) avoids the idle timer but trips a precondition in the pool when PostgreSQL goes away.
///
/// A holder task leases one connection from the pool and lends it until it closes (PostgreSQL restarted), then leases
/// again; the pool keeps doing what it does well: connecting, backing off, replacing closed connections. Holders are
/// added when a request finds no free connection, up to `maximum`, so a process holds as many connections as it has
/// needed at once.
final class ConnectionLender: Sendable {
    /// Leases one connection and runs the body with it (a client's `withConnection`).
    typealias Lease = @Sendable (_ body: (PostgresConnection) async throws -> Void) async throws -> Void

    private struct State {
        var idle: [PostgresConnection] = []
        var waiting: [(id: Int, continuation: CheckedContinuation<PostgresConnection, any Error>)] = []
        var nextID = 0
        var lease: Lease?
        var holders: [Task<Void, Never>] = []
        var stopped = false
    }

    let maximum: Int
    /// How long a holder waits to lease again after leasing failed (PostgreSQL away).
    let retryDelay: Duration
    private let state = Mutex(State())

    init(maximum: Int, retryDelay: Duration) {
        (self.maximum, self.retryDelay) = (maximum, retryDelay)
    }

    /// Lends connections from `lease` from now on (a new client's). The holders of the old one stop, closing their
    /// connections; requests already waiting get holders of the new one.
    func lend(from lease: @escaping Lease) {
        let old = self.state.withLock { state in
            let old = state.holders
            (state.lease, state.holders, state.idle) = (lease, [], [])
            for _ in 0..<min(state.waiting.count, self.maximum) { state.holders.append(Task { await self.hold(lease) }) }
            return old
        }
        for holder in old { holder.cancel() }
    }

    /// Stops lending: the holders close their connections, and waiting and later requests get TRY_AGAIN_LATER.
    func stop() {
        let (holders, waiting) = self.state.withLock { state in
            defer { (state.stopped, state.holders, state.idle, state.waiting) = (true, [], [], []) }
            return (state.holders, state.waiting)
        }
        for holder in holders { holder.cancel() }
        for waiter in waiting { waiter.continuation.resume(throwing: CloudError.databaseUnavailable(retryAfter: 1)) }
    }

    /// Runs `body` with a connection, waiting for one to be free (cancellable, so a request's deadline ends the wait).
    func withConnection<Result>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        let connection = try await self.borrow()
        defer { self.giveBack(connection) }
        return try await body(connection)
    }

    private func borrow() async throws -> PostgresConnection {
        if let connection = self.state.withLock({ $0.idle.popLast() }) { return connection }
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection, any Error>) in
                // One lock for the look, the wait and the new holder, so no connection or holder can come in between.
                let ready: Result<PostgresConnection, any Error>? = self.state.withLock { state in
                    if state.stopped { return .failure(CloudError.databaseUnavailable(retryAfter: 1)) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if let connection = state.idle.popLast() { return .success(connection) }
                    state.waiting.append((id, continuation))
                    if state.holders.count < self.maximum, let lease = state.lease {
                        state.holders.append(Task { await self.hold(lease) })
                    }
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                state.waiting.firstIndex { $0.id == id }.map { state.waiting.remove(at: $0).continuation }
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Hands `connection` to the longest waiting request, or keeps it for the next. A closed one is dropped: its holder
    /// leases another.
    private func giveBack(_ connection: PostgresConnection) {
        guard !connection.isClosed else { return }
        let waiter = self.state.withLock { state -> CheckedContinuation<PostgresConnection, any Error>? in
            if state.waiting.isEmpty {
                state.idle.append(connection)
                return nil
            }
            return state.waiting.removeFirst().continuation
        }
        waiter?.resume(returning: connection)
    }

    /// Leases a connection, lends it until it closes, and again, until cancelled.
    private func hold(_ lease: Lease) async {
        while !Task.isCancelled {
            do {
                try await lease { connection in
                    self.giveBack(connection)
                    await Self.untilClosedOrCancelled(connection)
                    // Not lent from here any more; closed before the pool has it back, as a request may still use it.
                    self.state.withLock { $0.idle.removeAll { $0 === connection } }
                    if !connection.isClosed { try? await connection.close() }
                }
            } catch {
                try? await Task.sleep(for: self.retryDelay)
            }
        }
    }

    private static func untilClosedOrCancelled(_ connection: PostgresConnection) async {
        let once = Mutex<CheckedContinuation<Void, Never>?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                once.withLock { $0 = continuation }
                connection.closeFuture.whenComplete { _ in once.withLock { $0.take() }?.resume() }
                if Task.isCancelled { once.withLock { $0.take() }?.resume() }
            }
        } onCancel: {
            once.withLock { $0.take() }?.resume()
        }
    }
}
