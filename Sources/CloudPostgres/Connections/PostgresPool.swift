import CloudCore
import CloudRuntime
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// The PostgreSQL connections every store uses: requests' reads and transactions borrow `OpenConnections`; single
/// queries (credentials, the console, background jobs) and the watch use a small PostgresNIO client, watched, and
/// replaced by a fresh one when PostgreSQL comes back after an outage.
///
/// Why: PostgresNIO's pool retries a lost server with a backoff that grows to a minute (100 ms × 1.25ⁿ) and cannot be
/// configured, so after a long outage a server took up to that long to serve again (measured 9.2 s after
/// 75 s). The watch asks `SELECT 1` every `checkInterval`; when that fails it probes PostgreSQL with a connection of
/// its own every `probeInterval`, and once one succeeds after a failed one it swaps in a new client, which connects
/// at once. While PostgreSQL is away, `unreachable` says since when and why (for `/ready`).
public final class PostgresPool: Service, Sendable {
    public struct Outage: Sendable, Equatable {
        /// Milliseconds since 1970 of the first failed check.
        public var since: Int64
        public var reason: String
        /// A connection of its own failed too: PostgreSQL is away, not just slow. Requests then fail at once.
        public var confirmed = false
    }

    let url: DatabaseURL
    let maximumConnections: Int
    let logger: Logger
    let checkInterval: Duration
    let probeInterval: Duration
    private let state: Mutex<(client: PostgresClient, running: Task<Void, Never>?, outage: Outage?)>
    /// What reads and transactions borrow.
    let connections: OpenConnections
    /// Which history of the database every connection serves, confirmed as each one opens.
    public let history = DatabaseHistory()

    public init(
        _ url: DatabaseURL, maximumConnections: Int = 20, logger: Logger, checkInterval: Duration = .seconds(1),
        probeInterval: Duration = .milliseconds(250)
    ) {
        (self.url, self.maximumConnections, self.logger) = (url, maximumConnections, logger)
        (self.checkInterval, self.probeInterval) = (checkInterval, probeInterval)
        self.state = Mutex((Self.client(url, maximumConnections, logger), nil, nil))
        self.connections = OpenConnections(url, maximum: maximumConnections, history: self.history, logger: logger)
    }

    /// A quarter as many connections as requests may hold, for single queries and the watch's check.
    static func client(_ url: DatabaseURL, _ maximumConnections: Int, _ logger: Logger) -> PostgresClient {
        let configuration = url.clientConfiguration(maximumConnections: max(2, maximumConnections / 4))
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// The client in use now.
    public var client: PostgresClient { self.state.withLock { $0.client } }

    /// Since when and why PostgreSQL does not answer; nil while it does.
    public var outage: Outage? { self.state.withLock { $0.outage } }

    /// Runs the client and the watch until cancelled or, in a `ServiceGroup`, until graceful shutdown.
    public func run() async throws {
        await self.startIfStopped()
        await cancelWhenGracefulShutdown { await self.watch() }
        self.connections.close()
        let running = self.state.withLock { $0.running }
        running?.cancel()
        await running?.value
    }

    /// Runs `body` while the pool runs, then stops it (a `ServiceGroup` runs it otherwise).
    public func whileRunning<Result: Sendable>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresPool) async throws -> Result
    ) async throws -> Result {
        // The client runs before the body's first query: PostgresNIO warns on every query made before (every CLI
        // command printed "PostgresClient.run() hasn't been called yet").
        await self.startIfStopped()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.run() }
            defer { group.cancelAll() }
            return try await body(self)
        }
    }

    private func startIfStopped() async {
        guard self.state.withLock({ $0.running == nil }) else { return }
        await self.start(self.client)
    }

    /// Runs `client` in place of the one running now, returning once its run has begun.
    private func start(_ client: PostgresClient) async {
        await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
            let task = Task {
                started.resume()
                await client.run()
            }
            let old = self.state.withLock { state in
                let old = state.running
                (state.client, state.running) = (client, task)
                return old
            }
            old?.cancel()
        }
    }

    func watch() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: self.checkInterval) } catch { return }
            if let failure = await self.failure(within: self.checkInterval, self.ping) {
                await self.outage(first: failure)
            }
        }
    }

    /// From a failed check until PostgreSQL answers a connection of its own; then, if it had been unreachable, a new
    /// client (the old one's backoff may be a minute long).
    func outage(first failure: String) async {
        self.state.withLock { $0.outage = Outage(since: Timestamp.now, reason: failure) }
        self.logger.warning("PostgreSQL does not answer (\(failure)); probing it every \(self.probeInterval)")
        var wasDown = false
        while !Task.isCancelled {
            guard let failure = await self.failure(within: self.checkInterval, { try await self.probe() }) else { break }
            wasDown = true
            self.state.withLock { $0.outage = Outage(since: $0.outage?.since ?? Timestamp.now, reason: failure, confirmed: true) }
            do { try await Task.sleep(for: self.probeInterval) } catch { return }
        }
        // A client that got its connections back by itself (a short outage) keeps serving what is in flight; one
        // still backing off is replaced. Asked briefly: a live connection answers in milliseconds.
        if wasDown, !Task.isCancelled,
            await self.failure(within: self.probeInterval, self.ping) != nil
        {
            await self.start(Self.client(self.url, self.maximumConnections, self.logger))
            self.logger.notice("PostgreSQL answers again; connecting afresh")
        }
        self.state.withLock { $0.outage = nil }
    }

    /// Confirms the database's history through the client in use: a process whose requests' connections stayed
    /// open learns of a failover within a check too.
    @Sendable func ping() async throws {
        try await self.client.withConnection { try await self.history.confirm(on: $0, logger: self.logger) }
    }

    /// Confirms the database's history now: the first tokens a store signs need its epoch.
    public func confirmHistory(logger: Logger) async throws {
        try await translatingDatabaseErrors { try await self.client.withConnection { try await self.history.confirm(on: $0, logger: logger) } }
    }

    /// Begins a new history whatever the fingerprint says (`stadiumcloud history fork`: after a restore that no
    /// fingerprint can tell, such as a file-system snapshot of a stopped cluster).
    public func forkHistory(reason: String, logger: Logger) async throws {
        try await translatingDatabaseErrors { try await self.client.withConnection { try await self.history.begin(reason: reason, on: $0, logger: logger) } }
    }

    /// "epoch E since T (fingerprint F)", for `stadiumcloud history`.
    public func historyDescription(logger: Logger) async throws -> String {
        for try await (epoch, started, fingerprint) in try await self.query(
            "SELECT epoch, started_ms, fingerprint FROM history", logger: logger
        ).decode((Int64, Int64, String).self) {
            let since = Date(timeIntervalSince1970: Double(started) / 1000).formatted(.iso8601)
            return "epoch \(epoch) since \(since) (fingerprint \(fingerprint): system identifier/timeline/database/table)"
        }
        return "no history yet: the database is not migrated"
    }

    /// Opens and closes one connection of its own.
    func probe() async throws {
        let connection = try await PostgresConnection.connect(configuration: self.url.connectionConfiguration, id: 0, logger: self.logger)
        try await connection.close()
    }

    /// Why `body` failed or did not finish within `limit`; nil when it worked.
    func failure(within limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async -> String? {
        do {
            try await withDatabaseDeadline(limit) { try await body() }
            return nil
        } catch let error as CloudError {
            return error.reason
        } catch let error as PSQLError {
            return error.underlying.map { "\($0)" } ?? "\(error.code)"
        } catch {
            return String(describing: type(of: error))
        }
    }

    // MARK: the stores' way in

    /// The client to use, or TRY_AGAIN_LATER at once while PostgreSQL is known to be away (no request waits for a
    /// connection that cannot come).
    func available() throws -> PostgresClient {
        try self.state.withLock { state in
            if let outage = state.outage, outage.confirmed {
                throw CloudError.databaseUnavailable(retryAfter: 1)
            }
            return state.client
        }
    }

    /// Runs one query on a connection of the client's (its rows are read after this returns, so not on a borrowed one).
    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws -> PostgresRowSequence {
        try await translatingDatabaseErrors { try await self.available().query(query, logger: logger, file: file, line: line) }
    }

    /// Runs `body` on a borrowed connection, translating transient database failures.
    public func reading<Result: Sendable>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        _ = try self.available()
        return try await translatingDatabaseErrors { try await self.connections.withConnection(body) }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws, and the body's own
    /// error is rethrown unchanged (PostgresNIO's `withTransaction` wraps it).
    func transaction<Result: Sendable>(logger: Logger, _ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        _ = try self.available()
        return try await translatingDatabaseErrors {
            try await self.connections.withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                do {
                    let result = try await body(connection)
                    try await connection.query("COMMIT", logger: logger)
                    return result
                } catch {
                    // Not on a closed connection: PostgresNIO has been seen never to end a query there. One whose
                    // ROLLBACK failed is closed, so no later request finds itself inside this transaction.
                    if !connection.isClosed, (try? await connection.query("ROLLBACK", logger: logger)) == nil {
                        try? await connection.close()
                    }
                    throw error
                }
            }
        }
    }
}
