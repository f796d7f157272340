import CloudCore
import Crypto
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Accounts, container API tokens and web auth tokens. Tokens are random, shown once, and stored as SHA-256.
public final class CredentialStore: Sendable {
    let client: PostgresClient
    /// Recently verified tokens, so a request does not cost a lookup each time; revocation takes effect
    /// within `cacheLifetime`.
    private let cache = Mutex<[Data: (value: CachedCredential, expires: ContinuousClock.Instant)]>([:])
    let cacheLifetime: Duration

    enum CachedCredential {
        case apiToken(APITokenRole)
        case account(Account)
        case none
    }

    public init(client: PostgresClient, cacheLifetime: Duration = .seconds(10)) {
        self.client = client
        self.cacheLifetime = cacheLifetime
    }

    static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Array(token.utf8))) }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Creates an account and its first web auth token.
    public func createAccount(name: String, logger: Logger) async throws -> (account: Account, webAuthToken: String) {
        try FieldName.validate(name, path: "account", what: "account name")
        let userRecordName = "_" + Self.hex(Self.randomBytes(16))
        let token = TokenSigner.base64URL(Self.randomBytes(32))
        let now = Timestamp.now
        let account = try await self.client.transaction(logger: logger) { connection -> Account in
            let rows = try await connection.query(
                """
                INSERT INTO accounts (name, user_record_name, created_ms) VALUES (\(name), \(userRecordName), \(now))
                ON CONFLICT (name) DO NOTHING RETURNING id
                """, logger: logger)
            var id: Int64?
            for try await value in rows.decode(Int64.self) { id = value }
            guard let id else { throw CloudError(.exists, "an account named \(name) already exists") }
            try await connection.query(
                "INSERT INTO credentials (token_hash, kind, account_id, created_ms) VALUES (\(Self.hash(token)), 'web_auth', \(id), \(now))",
                logger: logger)
            return Account(id: id, name: name, userRecordName: userRecordName)
        }
        return (account, token)
    }

    /// Creates a container API token (64 lowercase hex digits, as MistKit validates).
    public func createAPIToken(role: APITokenRole, label: String?, logger: Logger) async throws -> String {
        let token = Self.hex(Self.randomBytes(32))
        _ = try await translatingDatabaseErrors {
            try await self.client.query(
                "INSERT INTO credentials (token_hash, kind, label, created_ms) VALUES (\(Self.hash(token)), \(role.rawValue), \(label), \(Timestamp.now))",
                logger: logger)
        }
        return token
    }

    /// Revokes a token of any kind; returns false when no live token matched.
    public func revoke(token: String, logger: Logger) async throws -> Bool {
        let rows = try await translatingDatabaseErrors {
            try await self.client.query(
                "UPDATE credentials SET revoked_ms = \(Timestamp.now) WHERE token_hash = \(Self.hash(token)) AND revoked_ms IS NULL RETURNING 1",
                logger: logger)
        }
        var found = false
        for try await _ in rows { found = true }
        self.cache.withLock { $0[Self.hash(token)] = nil }
        return found
    }

    /// The role of a live container API token, or `nil`.
    public func apiTokenRole(_ token: String, logger: Logger) async throws -> APITokenRole? {
        if case .apiToken(let role) = try await self.resolve(token, logger: logger) { return role }
        return nil
    }

    /// The account a live web auth token belongs to, or `nil`.
    public func account(forWebAuthToken token: String, logger: Logger) async throws -> Account? {
        if case .account(let account) = try await self.resolve(token, logger: logger) { return account }
        return nil
    }

    private func resolve(_ token: String, logger: Logger) async throws -> CachedCredential {
        let hash = Self.hash(token)
        let now = ContinuousClock.now
        if let cached = self.cache.withLock({ $0[hash] }), cached.expires > now { return cached.value }
        let rows = try await translatingDatabaseErrors {
            try await self.client.query(
                """
                SELECT c.kind, a.id, a.name, a.user_record_name FROM credentials c LEFT JOIN accounts a ON a.id = c.account_id
                WHERE c.token_hash = \(hash) AND c.revoked_ms IS NULL
                """, logger: logger)
        }
        var value = CachedCredential.none
        for try await (kind, id, name, recordName) in rows.decode((String, Int64?, String?, String?).self) {
            if kind == "web_auth", let id, let name, let recordName {
                value = .account(Account(id: id, name: name, userRecordName: recordName))
            } else if let role = APITokenRole(rawValue: kind) {
                value = .apiToken(role)
            }
        }
        self.cache.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache[hash] = (value, now + self.cacheLifetime)
        }
        return value
    }

    /// The key that signs change tokens and continuation markers; created on first use and kept in the database.
    public func tokenSigningKey(logger: Logger) async throws -> [UInt8] {
        try await translatingDatabaseErrors {
            try await self.client.query(
                "INSERT INTO server_secrets (name, value) VALUES ('token_signing_key', \(Data(Self.randomBytes(32)))) ON CONFLICT (name) DO NOTHING",
                logger: logger)
            for try await value in try await self.client.query(
                "SELECT value FROM server_secrets WHERE name = 'token_signing_key'", logger: logger
            ).decode(Data.self) { return Array(value) }
            throw CloudError(.internalError, "token signing key missing")
        }
    }
}
