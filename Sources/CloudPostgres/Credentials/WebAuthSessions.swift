import CloudCore
import CloudRuntime
import Logging
import PostgresNIO
import Synchronization

/// Signed web auth tokens and what this process knows of their sessions (docs/AUTH.md). A token carries its
/// session, its generation and its issue time under the server's HMAC key, so answering with generation + 1 costs
/// no write. The first use of each generation is what retires the one before; those first uses are recorded in
/// `auth_session_uses` in batches (at most 4 statements a second per process), and this process's own are known at once.
final class WebAuthSessions: Sendable {
    struct Claims: Equatable {
        var sessionID: Int64
        var generation: Int64
        var issuedMs: Int64
    }

    struct Session {
        var account: Account
        var idleMs: Int64
        var revoked: Bool
        /// The newest generation used (-1: none yet) and when it was first used.
        var newest: Int64
        var newestUsedMs: Int64
    }

    private struct State {
        var signer: TokenSigner?
        var sessions: [Int64: (session: Session?, expiresMs: Int64)] = [:]
        /// First uses this process saw and has not written yet, by session and generation.
        var unwritten: [Int64: [Int64: Int64]] = [:]
        /// Uses on their way to the table: still this process's knowledge until the write commits (forgetting them
        /// when the write started let a copied token pass as "no first use recorded" in between).
        var writing: [Int64: [Int64: Int64]] = [:]

        /// This process's uses of a session not yet in the table, by generation.
        func uses(of session: Int64) -> [Int64: Int64] {
            (self.unwritten[session] ?? [:]).merging(self.writing[session] ?? [:]) { min($0, $1) }
        }
    }

    static let prefix = "2__1__"
    private static let kind: UInt8 = 3

    let client: PostgresPool
    let clock: ServerClock
    let cacheLifetime: Duration
    let loadKey: @Sendable (Logger) async throws -> [UInt8]
    /// Writes first uses `writeInterval` after the first unwritten one (nil interval: only `writeUses`, for tests).
    private let writing: DelayedFlush
    /// Changed whenever a write of first uses ends (for tests).
    let usesWritten = StateSignal()
    private let state = Mutex(State())
    /// Concurrent reads of sessions share one statement (`load`).
    private let loads = CoalescedReads<Int64, Session>()

    init(
        client: PostgresPool, clock: ServerClock, cacheLifetime: Duration, writeInterval: Duration?,
        loadKey: @escaping @Sendable (Logger) async throws -> [UInt8]
    ) {
        (self.client, self.clock, self.cacheLifetime, self.loadKey) = (client, clock, cacheLifetime, loadKey)
        self.writing = DelayedFlush(after: writeInterval, clock: clock)
    }

    func signer(logger: Logger) async throws -> TokenSigner {
        if let signer = self.state.withLock({ $0.signer }) { return signer }
        let signer = TokenSigner(key: try await self.loadKey(logger))
        self.state.withLock { $0.signer = signer }
        return signer
    }

    /// A new token: `2__1__` (CloudKit's tokens look like `<n>__<n>__…`) and the signed claims plus 32 random bits,
    /// so two answers from one token differ.
    func token(_ claims: Claims, logger: Logger) async throws -> String {
        var payload = [Self.kind]
        for number in [claims.sessionID, claims.generation, claims.issuedMs] { payload += number.bigEndianBytes }
        payload += (0..<4).map { _ in UInt8.random(in: .min ... .max) }
        return Self.prefix + (try await self.signer(logger: logger)).sign(payload)
    }

    /// The claims of a token this server signed, or nil (another format, altered, forged).
    func claims(of token: String, logger: Logger) async throws -> Claims? {
        guard token.hasPrefix(Self.prefix) else { return nil }
        guard let payload = try await self.signer(logger: logger).verify(String(token.dropFirst(Self.prefix.count))),
            payload.count == 29, payload[0] == Self.kind
        else { return nil }
        func number(_ at: Int) -> Int64 { Int64(bigEndianBytes: payload[at..<at + 8]) }
        return Claims(sessionID: number(1), generation: number(9), issuedMs: number(17))
    }

    /// The session, from this process's memory (at most `cacheLifetime` old) with its own unwritten uses on top.
    func session(_ id: Int64, logger: Logger) async throws -> Session? {
        let now = self.clock.now
        var session: Session?
        if let cached = self.state.withLock({ $0.sessions[id] }), cached.expiresMs > now {
            session = cached.session
        } else {
            session = try await self.load(id, logger: logger)
            self.state.withLock { state in
                if state.sessions.count > 10_000 { state.sessions = state.sessions.filter { $0.value.expiresMs > now } }
                state.sessions[id] = (session, now + self.cacheLifetime.milliseconds)
            }
        }
        if let newest = self.state.withLock({ $0.uses(of: id).max { $0.key < $1.key } }), newest.key > session?.newest ?? .max {
            session?.newest = newest.key
            session?.newestUsedMs = newest.value
        }
        return session
    }

    /// Read in a read that started after this call and answers every session asked for meanwhile: a thousand people
    /// signed in at once each need theirs read again every `cacheLifetime`, and one statement reads many.
    private func load(_ id: Int64, logger: Logger) async throws -> Session? {
        try await self.loads.read(id) { ids in
            try await self.client.reading { connection in
                var sessions: [Int64: Session] = [:]
                for try await (id, session) in try await connection.execute(LoadSessions(ids: Array(ids)), logger: logger) { sessions[id] = session }
                return sessions
            }
        }
    }

    /// Sessions with their accounts and newest generations. Prepared (parsed once): every signed-in request whose
    /// session this process has not read within `cacheLifetime` reads it. PostgreSQL still plans it for each call's ids.
    private struct LoadSessions: PostgresPreparedStatement {
        static var name: String { "LoadSessions" }
        static let sql = """
            SELECT s.id, a.id, a.name, a.user_record_name, s.idle_ms, s.revoked_ms IS NOT NULL, u.generation, u.first_used_ms
            FROM auth_sessions s JOIN accounts a ON a.id = s.account_id
            LEFT JOIN LATERAL (SELECT generation, first_used_ms FROM auth_session_uses WHERE session_id = s.id ORDER BY generation DESC LIMIT 1) u ON true
            WHERE s.id = ANY($1::bigint[])
            """

        var ids: [Int64]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(self.ids)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> (Int64, Session) {
            let (id, account, name, recordName, idle, revoked, newest, used) = try row.decode(
                (Int64, Int64, String, String, Int64, Bool, Int64?, Int64?).self)
            let session = Session(
                account: Account(id: account, name: name, userRecordName: recordName), idleMs: idle, revoked: revoked, newest: newest ?? -1,
                newestUsedMs: used ?? 0)
            return (id, session)
        }
    }

    /// When `generation` of the session was first used, if anyone recorded it (this process or the table).
    func firstUse(session: Int64, generation: Int64, logger: Logger) async throws -> Int64? {
        if let mine = self.state.withLock({ $0.uses(of: session)[generation] }) { return mine }
        return try await translatingDatabaseErrors {
            for try await used in try await self.client.query(
                "SELECT first_used_ms FROM auth_session_uses WHERE session_id = \(session) AND generation = \(generation)", logger: logger
            ).decode(Int64.self) { return used }
            return nil
        }
    }

    /// Notes the first use of a generation; it is written within `writeInterval`.
    func noteUse(session: Int64, generation: Int64, at now: Int64) {
        self.state.withLock { state in
            if state.unwritten[session]?[generation] == nil { state.unwritten[session, default: [:]][generation] = now }
        }
        self.writing.request { await self.writeUses(logger: Logger(label: "stadiumcloud.auth")) }
    }

    /// Writes the first uses noted so far in one statement (the earliest report of a generation wins). When the
    /// database is away they wait for the next write.
    func writeUses(logger: Logger) async {
        let uses = self.state.withLock { state in
            defer {
                state.writing.merge(state.unwritten) { $0.merging($1) { min($0, $1) } }
                state.unwritten = [:]
            }
            return state.unwritten.flatMap { session, generations in generations.map { (session, $0.key, $0.value) } }
        }
        defer {
            self.state.withLock { state in
                for (session, generation, used) in uses where state.writing[session]?[generation] == used {
                    state.writing[session]?[generation] = nil
                    if state.writing[session]?.isEmpty == true { state.writing[session] = nil }
                }
            }
            self.usesWritten.changed()
        }
        guard !uses.isEmpty else { return }
        do {
            _ = try await translatingDatabaseErrors {
                try await self.client.query(
                    """
                    INSERT INTO auth_session_uses (session_id, generation, first_used_ms)
                    SELECT u.* FROM unnest(\(uses.map(\.0))::int8[], \(uses.map(\.1))::int8[], \(uses.map(\.2))::int8[]) AS u(session_id, generation, used)
                    WHERE EXISTS (SELECT 1 FROM auth_sessions s WHERE s.id = u.session_id)
                    ON CONFLICT (session_id, generation) DO UPDATE SET first_used_ms = least(auth_session_uses.first_used_ms, excluded.first_used_ms)
                    """, logger: logger)
            }
            // The next request reads the sessions again, now with these uses.
            self.state.withLock { state in for use in uses { state.sessions[use.0] = nil } }
        } catch {
            logger.debug("web auth token uses not written yet", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            self.state.withLock { state in
                for (session, generation, used) in uses where state.unwritten[session]?[generation] == nil {
                    state.unwritten[session, default: [:]][generation] = used
                }
            }
        }
    }

    /// Forgets what this process cached of a session (revoked here: the next request reads it again).
    func forget(_ session: Int64) {
        self.state.withLock { $0.sessions[session] = nil }
    }

    /// Forgets every cached session (the database's history forked).
    func forgetAll() {
        self.state.withLock { $0.sessions.removeAll() }
    }
}
