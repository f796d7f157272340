import CloudCore
import Logging
import PostgresNIO
import Synchronization

/// Which history of the database this process serves (docs/SYNC.md, "Restores and failovers").
///
/// A restore, a point-in-time recovery or the promotion of a lagging replica rolls the database back: change numbers,
/// zone ids and account ids are handed out again for other things. Everything signed for the lost history (change
/// tokens, asset URLs, receipts) must then be refused, or a device would take a new change for one it has seen. The
/// `history` table holds a random epoch and the fingerprint of the database it began in; every new connection
/// compares that fingerprint with the database's own, and when they differ the history forked: a new epoch begins.
/// What is signed carries the epoch it was signed in.
public final class DatabaseHistory: Sendable {
    public struct Epoch: Sendable, Equatable {
        public var id: Int64
        /// Tokens made before epochs existed still count (no fork since).
        public var acceptsUnmarked: Bool
    }

    private let state = Mutex<(epoch: Epoch?, forkHandlers: [@Sendable () -> Void])>((nil, []))

    init() {}

    /// The epoch this process signs in; nil until the first connection confirmed it.
    public var epoch: Epoch? { self.state.withLock { $0.epoch } }

    /// Whether something signed in `epoch` (0: before epochs existed) belongs to the current history. Nothing does
    /// before the first connection confirmed one.
    public func isCurrent(_ epoch: Int64) -> Bool {
        guard let current = self.epoch else { return false }
        return epoch == current.id || (epoch == 0 && current.acceptsUnmarked)
    }

    /// Runs `handler` whenever this process learns that the history forked: caches of the lost history go.
    public func onFork(_ handler: @escaping @Sendable () -> Void) {
        self.state.withLock { $0.forkHandlers.append(handler) }
    }

    /// The database's own fingerprint: it changes with the cluster (system identifier), the timeline (point-in-time
    /// recovery, promotion), the database (restore into a new one) and the `history` table (`pg_restore --clean`).
    static let fingerprint = """
        SELECT concat_ws('/', s.system_identifier, substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8), d.oid, 'history'::regclass::oid)
        FROM pg_control_system() s, pg_database d WHERE d.datname = current_database()
        """

    /// Checks the history on a new connection before anything uses it; begins a new epoch when the database's
    /// fingerprint is not the one the current epoch began in (or there is none yet).
    func confirm(on connection: PostgresConnection, logger: Logger) async throws {
        do {
            let (fingerprint, recorded) = try await Self.read(on: connection, logger: logger)
            if let recorded, recorded.fingerprint == fingerprint { return self.adopt(recorded.epoch, logger: logger) }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "42P01" {
            // Not migrated yet (`migrate up` itself, or a server that will refuse to start): no history to serve.
            return
        }
        try await self.begin(reason: nil, on: connection, logger: logger)
    }

    /// The database's fingerprint now, and the epoch recorded with the fingerprint it began in.
    private static func read(on connection: PostgresConnection, logger: Logger) async throws -> (String, (epoch: Epoch, fingerprint: String)?) {
        let rows = try await connection.query(
            "SELECT (\(unescaped: Self.fingerprint)), h.epoch, h.accepts_unmarked, h.fingerprint FROM (SELECT 1) one LEFT JOIN history h ON true",
            logger: logger)
        for try await (fingerprint, epoch, acceptsUnmarked, recorded) in rows.decode((String, Int64?, Bool?, String?).self) {
            guard let epoch, let acceptsUnmarked, let recorded else { return (fingerprint, nil) }
            return (fingerprint, (Epoch(id: epoch, acceptsUnmarked: acceptsUnmarked), recorded))
        }
        throw CloudError(.internalError, "the history query returned no row")
    }

    /// Begins a new epoch unless another process did since (under the table's lock); with a `reason`, whatever the
    /// fingerprint says (`stadiumcloud history fork`, after a restore no fingerprint can tell).
    func begin(reason: String?, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("BEGIN", logger: logger)
        do {
            try await connection.query("LOCK TABLE history IN EXCLUSIVE MODE", logger: logger)
            let (fingerprint, recorded) = try await Self.read(on: connection, logger: logger)
            let epoch: Epoch
            if let recorded, recorded.fingerprint == fingerprint, reason == nil {
                epoch = recorded.epoch  // another process began it first
            } else {
                // The first history (no row yet) still honours tokens made before epochs existed; a fork by hand
                // never does (it may follow a restore of a backup from before epochs).
                epoch = Epoch(id: Int64.random(in: 1...Int64.max), acceptsUnmarked: recorded == nil && reason == nil)
                try await connection.query(
                    """
                    INSERT INTO history (epoch, fingerprint, accepts_unmarked, started_ms) VALUES (\(epoch.id), \(fingerprint), \(epoch.acceptsUnmarked), \(Timestamp.now))
                    ON CONFLICT (only_row) DO UPDATE SET epoch = excluded.epoch, fingerprint = excluded.fingerprint,
                        accepts_unmarked = excluded.accepts_unmarked, started_ms = excluded.started_ms
                    """, logger: logger)
                if let recorded {
                    logger.warning(
                        "the database's history forked (\(reason ?? "restored, recovered to a point in time, or a replica promoted")): change tokens, asset URLs and receipts of the previous history are refused from now on; devices fetch again",
                        metadata: ["epoch": "\(epoch.id)", "fingerprint": "\(fingerprint)", "previous": "\(recorded.fingerprint)"])
                }
            }
            try await connection.query("COMMIT", logger: logger)
            self.adopt(epoch, logger: logger)
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    private func adopt(_ epoch: Epoch, logger: Logger) {
        let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
            defer { state.epoch = epoch }
            guard let known = state.epoch, known != epoch else { return [] }
            return state.forkHandlers
        }
        if !handlers.isEmpty { logger.notice("this process now serves a new history of the database", metadata: ["epoch": "\(epoch.id)"]) }
        for handler in handlers { handler() }
    }
}
