import CloudCore
import CloudRuntime
import Crypto
import Dispatch
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// A verified web auth token: whose it is, and what rotating it needs.
public struct WebAuthGrant: Sendable {
    public var account: Account
    var sessionID: Int64
    /// The token's generation in its session; the answer's token is the next one.
    var generation: Int64
}

/// A registered server-to-server key, as operators list it.
public struct ServerKeyInfo: Sendable {
    public var keyID: String
    public var label: String?
    public var createdMs: Int64
    public var revokedMs: Int64?
    /// When a request last used it (noted at most once a minute).
    public var lastUsedMs: Int64?
}

/// Accounts, passwords, container API tokens, web auth sessions and server-to-server keys. Secrets are stored
/// only as hashes (tokens: SHA-256; passwords: scrypt) or as public keys (docs/AUTH.md).
public final class CredentialStore: Sendable {
    let client: PostgresPool
    /// Recently verified tokens and keys, so a request does not cost a lookup each time; a revocation made by another
    /// server process takes effect here within `cacheLifetime` (1 s: the bound docs/SCALING.md promises across processes).
    let cache = Mutex<[Data: (value: CachedCredential, expiresMs: Int64)]>([:])
    let cacheLifetime: Duration
    let hasher: PasswordHasher
    /// The time sessions, grace periods and revocations are measured in.
    let clock: ServerClock
    /// Signed web auth tokens and their sessions.
    let sessions: WebAuthSessions
    /// scrypt is CPU- and memory-heavy: one queue runs every hash, so sign-in storms queue up instead of
    /// taking every core (and the event loops) away from sync traffic.
    private static let hashingQueue = DispatchQueue(label: "stadiumcloud.password-hashing")

    enum CachedCredential {
        case apiToken
        case webAuth(WebAuthRow)
        case serverKey(P256.Signing.PublicKey)
        case none
    }

    /// A token of the row-per-token scheme (before migration 0007).
    struct WebAuthRow {
        var sessionID: Int64
        var expiresMs: Int64
        var retiredMs: Int64?
    }

    /// `useWriteInterval`: how long first uses of web auth tokens wait to be written together (nil: only when
    /// `writeTokenUses` is called, for tests).
    public init(
        client: PostgresPool, hasher: PasswordHasher = PasswordHasher(), clock: ServerClock = .system, cacheLifetime: Duration = .seconds(1),
        useWriteInterval: Duration? = .milliseconds(250)
    ) {
        self.client = client
        self.hasher = hasher
        self.clock = clock
        self.cacheLifetime = cacheLifetime
        self.sessions = WebAuthSessions(client: client, clock: clock, cacheLifetime: cacheLifetime, writeInterval: useWriteInterval) { logger in
            try await Self.tokenSigningKey(client, logger: logger)
        }
        // After a restore or failover an account id may stand for someone else: nothing verified before is kept.
        client.history.onFork { [weak self] in
            self?.cache.withLock { $0.removeAll() }
            self?.sessions.forgetAll()
        }
    }

    static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Array(token.utf8))) }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.hexString }

    // MARK: Accounts and passwords

    /// Creates an account, with a password when given, and a first web auth token (a keep-signed-in session).
    public func createAccount(name: String, password: String? = nil, idleMs: Int64, logger: Logger) async throws -> (
        account: Account, webAuthToken: String
    ) {
        try FieldName.validate(name, path: "account", what: "account name")
        let passwordHash = try await password.asyncMap { try await self.hashPassword($0) }
        let userRecordName = "_" + Self.hex(Self.randomBytes(16))
        let now = self.clock.now
        return try await self.client.transaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                INSERT INTO accounts (name, user_record_name, created_ms, password_hash) VALUES (\(name), \(userRecordName), \(now), \(passwordHash))
                ON CONFLICT (name) DO NOTHING RETURNING id
                """, logger: logger)
            var id: Int64?
            for try await value in rows.decode(Int64.self) { id = value }
            guard let id else { throw CloudError(.exists, "an account named \(name) already exists") }
            let account = Account(id: id, name: name, userRecordName: userRecordName)
            return (account, try await self.startSession(for: account, idleMs: idleMs, on: connection, logger: logger))
        }
    }

    /// Sets (or, with `nil`, removes) an account's password; false when no account has that name.
    public func setPassword(accountName: String, password: String?, logger: Logger) async throws -> Bool {
        let passwordHash = try await password.asyncMap { try await self.hashPassword($0) }
        return try await self.touchesRow(
            "UPDATE accounts SET password_hash = \(passwordHash) WHERE name = \(accountName) RETURNING 1", logger: logger)
    }

    /// Checks a name and password and starts a session; `nil` for an unknown name, a wrong password or an account
    /// without one, all alike and in about the same time.
    public func signIn(accountName: String, password: String, idleMs: Int64, logger: Logger) async throws -> (account: Account, webAuthToken: String)?
    {
        guard let (account, _) = try await self.verifiedAccount(accountName: accountName, password: password, logger: logger) else { return nil }
        let token = try await self.client.transaction(logger: logger) { connection in
            try await self.startSession(for: account, idleMs: idleMs, on: connection, logger: logger)
        }
        return (account, token)
    }

    /// The account a name and password prove, and whether it is an operator's; nil for an unknown name, a wrong
    /// password or an account without one, all alike and in about the same time.
    /// True when `password` is the account's (false for an account without one): a person confirming who they are
    /// before something that cannot be undone.
    public func checkPassword(accountName: String, password: String, logger: Logger) async throws -> Bool {
        try await self.verifiedAccount(accountName: accountName, password: password, logger: logger) != nil
    }

    func verifiedAccount(accountName: String, password: String, logger: Logger) async throws -> (account: Account, isOperator: Bool)? {
        let rows = try await translatingDatabaseErrors {
            try await self.client.query(
                "SELECT id, user_record_name, password_hash, operator FROM accounts WHERE name = \(accountName)", logger: logger)
        }
        var found: (account: Account, hash: String?, isOperator: Bool)?
        for try await (id, recordName, hash, isOperator) in rows.decode((Int64, String, String?, Bool).self) {
            found = (Account(id: id, name: accountName, userRecordName: recordName), hash, isOperator)
        }
        let stored = found?.hash ?? self.decoyHash
        let matches = await Self.onHashingQueue { PasswordHasher.verify(password, against: stored) }
        guard let found, found.hash != nil, matches else { return nil }
        return (found.account, found.isOperator)
    }

    /// A hash no password matches in practice, verified for unknown names so that they cost the same time.
    private var decoyHash: String {
        "$scrypt$ln=\(self.hasher.log2Rounds),r=8,p=3$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    }

    private func hashPassword(_ password: String) async throws -> String {
        try PasswordHasher.check(password)
        let hasher = self.hasher
        return try await Self.onHashingQueue { try hasher.hash(password) }
    }

    private static func onHashingQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Self.hashingQueue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    private static func onHashingQueue<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Self.hashingQueue.async { continuation.resume(returning: work()) }
        }
    }

    // MARK: API tokens

    /// Creates a container API token (64 lowercase hex digits, as MistKit validates).
    public func createAPIToken(label: String?, logger: Logger) async throws -> String {
        let token = Self.hex(Self.randomBytes(32))
        _ = try await translatingDatabaseErrors {
            try await self.client.query(
                "INSERT INTO credentials (token_hash, kind, label, created_ms) VALUES (\(Self.hash(token)), 'api', \(label), \(self.clock.now))",
                logger: logger)
        }
        return token
    }

    /// Revokes an API token, or the whole session of a web auth token; false when no live token matched.
    public func revoke(token: String, logger: Logger) async throws -> Bool {
        if let claims = try await self.sessions.claims(of: token, logger: logger) {
            return try await self.endSession(claims.sessionID, logger: logger)
        }
        let found = try await self.touchesRow(
            """
            UPDATE credentials SET revoked_ms = \(self.clock.now) WHERE revoked_ms IS NULL
            AND (token_hash = \(Self.hash(token)) OR session_id = (SELECT session_id FROM credentials WHERE token_hash = \(Self.hash(token))))
            RETURNING 1
            """, logger: logger)
        self.cache.withLock { $0.removeAll() }
        return found
    }

    /// Whether `token` is a live container API token.
    public func isAPIToken(_ token: String, logger: Logger) async throws -> Bool {
        if case .apiToken = try await self.resolve(token, logger: logger) { return true }
        return false
    }

    func resolve(_ token: String, logger: Logger) async throws -> CachedCredential {
        try await self.cached(Self.hash(token)) { hash in
            // The lookup also notes an API token's last use, at most once a minute (the console shows it).
            let now = self.clock.now
            let rows = try await self.client.query(
                """
                WITH used AS (
                    UPDATE credentials SET last_used_ms = \(now) WHERE token_hash = \(hash) AND kind = 'api' AND revoked_ms IS NULL
                    AND coalesce(last_used_ms, 0) < \(now - 60_000))
                SELECT c.kind, c.session_id, c.expires_ms, c.retired_ms FROM credentials c
                WHERE c.token_hash = \(hash) AND c.revoked_ms IS NULL
                """, logger: logger)
            var value = CachedCredential.none
            for try await (kind, session, expires, retired) in rows.decode((String, Int64?, Int64?, Int64?).self) {
                if kind == "web_auth", let session, let expires {
                    value = .webAuth(WebAuthRow(sessionID: session, expiresMs: expires, retiredMs: retired))
                } else if kind == "api" {
                    value = .apiToken
                }
            }
            return value
        }
    }

    /// Looks `key` up in the cache, or loads it (database errors become TRY_AGAIN_LATER) and caches the answer.
    func cached(_ key: Data, load: (Data) async throws -> CachedCredential) async throws -> CachedCredential {
        let now = self.clock.now
        if let cached = self.cache.withLock({ $0[key] }), cached.expiresMs > now { return cached.value }
        let value = try await translatingDatabaseErrors { try await load(key) }
        self.cache.withLock { cache in
            // Rotation adds a token per request: at the bound, forget the expired entries, or everything when more
            // than half are live (so the sweep runs at most once per 5,000 inserts).
            if cache.count > 10_000 {
                cache = cache.filter { $0.value.expiresMs > now }
                if cache.count > 5_000 { cache.removeAll() }
            }
            cache[key] = (value, now + self.cacheLifetime.milliseconds)
        }
        return value
    }

    /// Runs a statement that ends in `RETURNING 1`; whether it touched a row.
    func touchesRow(_ query: PostgresQuery, logger: Logger) async throws -> Bool {
        try await translatingDatabaseErrors {
            for try await _ in try await self.client.query(query, logger: logger) { return true }
            return false
        }
    }

    /// Takes `used` requests from each key's shared token bucket (created full, refilled at its rate since its
    /// last update) and answers every bucket's level afterwards: how every process shares one budget.
    /// Deletes these shared rate buckets (an erased account's).
    public func deleteSharedBuckets(_ keys: [String], logger: Logger) async throws {
        try await translatingDatabaseErrors { try await self.client.query("DELETE FROM rate_buckets WHERE key = ANY(\(keys))", logger: logger) }
    }

    public func takeFromSharedBuckets(_ used: [(key: String, count: Int, limit: (perSecond: Double, burst: Double))], logger: Logger)
        async throws -> [String: Double]
    {
        // Sorted, so two processes updating the same keys lock them in the same order (no deadlock).
        let sorted = used.sorted { $0.key < $1.key }
        let keys = sorted.map(\.key)
        let taken = sorted.map { Double($0.count) }
        let rates = sorted.map(\.limit.perSecond)
        let bursts = sorted.map(\.limit.burst)
        var levels: [String: Double] = [:]
        try await translatingDatabaseErrors {
            let rows = try await self.client.query(
                """
                INSERT INTO rate_buckets AS b (key, tokens, per_second, burst, updated_ms)
                SELECT key, burst - taken, per_second, burst, \(self.clock.now)
                FROM unnest(\(keys)::text[], \(taken)::float8[], \(rates)::float8[], \(bursts)::float8[]) AS u(key, taken, per_second, burst)
                ON CONFLICT (key) DO UPDATE SET
                    tokens = LEAST(excluded.burst, b.tokens + GREATEST(0, excluded.updated_ms - b.updated_ms) / 1000.0 * excluded.per_second)
                        - (excluded.burst - excluded.tokens),
                    per_second = excluded.per_second, burst = excluded.burst, updated_ms = excluded.updated_ms
                RETURNING key, tokens
                """, logger: logger)
            for try await (key, tokens) in rows.decode((String, Double).self) { levels[key] = tokens }
        }
        return levels
    }

    /// Deletes what is no longer needed: seen signatures past the signing window; tokens of the row-per-token
    /// scheme expired or revoked more than a day ago or retired more than an hour ago; first uses of signed tokens
    /// older than an hour except each session's newest (an older copy is caught without them); rate buckets idle
    /// for an hour (full again by then).
    public func purgeExpired(signatureWindowMs: Int64, logger: Logger) async throws {
        let now = self.clock.now
        try await translatingDatabaseErrors {
            try await self.client.query("DELETE FROM seen_signatures WHERE seen_ms < \(now - 2 * signatureWindowMs)", logger: logger)
            try await self.client.query(
                """
                DELETE FROM credentials WHERE kind = 'web_auth'
                AND (expires_ms < \(now - 86_400_000) OR revoked_ms < \(now - 86_400_000) OR retired_ms < \(now - 3_600_000))
                """, logger: logger)
            try await self.client.query("DELETE FROM rate_buckets WHERE updated_ms < \(now - 3_600_000)", logger: logger)
            // First uses older than an hour, except each session's newest (a token that old and older than it is a copy).
            try await self.client.query(
                """
                DELETE FROM auth_session_uses u WHERE first_used_ms < \(now - 3_600_000)
                AND generation < (SELECT max(generation) FROM auth_session_uses n WHERE n.session_id = u.session_id)
                """, logger: logger)
            // Console sessions idle for a day (they stop opening anything after 15 minutes).
            try await self.client.query("DELETE FROM console_sessions WHERE used_ms < \(now - 86_400_000)", logger: logger)
        }
    }

    // MARK: Server secrets

    /// The key that signs change tokens and continuation markers; created on first use and kept in the database.
    public func tokenSigningKey(logger: Logger) async throws -> [UInt8] {
        try await Self.tokenSigningKey(self.client, logger: logger)
    }

    static func tokenSigningKey(_ client: PostgresPool, logger: Logger) async throws -> [UInt8] {
        try await translatingDatabaseErrors {
            try await client.query(
                "INSERT INTO server_secrets (name, value) VALUES ('token_signing_key', \(Data(Self.randomBytes(32)))) ON CONFLICT (name) DO NOTHING",
                logger: logger)
            for try await value in try await client.query(
                "SELECT value FROM server_secrets WHERE name = 'token_signing_key'", logger: logger
            ).decode(Data.self) { return Array(value) }
            throw CloudError(.internalError, "token signing key missing")
        }
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
