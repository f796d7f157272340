import CloudCore
import CloudRuntime
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// A signed-in operator's console session: who, and the form token every console form must carry (CSRF).
public struct ConsoleSession: Sendable {
    public var account: Account
    public var formToken: String
}

/// Console sessions (migration 0010): operators only, a cookie each, ended by signing out or by staying idle.
extension CredentialStore {
    /// Makes an account an operator's (or not); false when no account has the name.
    public func setOperator(accountName: String, _ isOperator: Bool, logger: Logger) async throws -> Bool {
        try await self.touchesRow("UPDATE accounts SET operator = \(isOperator) WHERE name = \(accountName) RETURNING 1", logger: logger)
    }

    /// Checks an operator's name and password and starts a console session: the cookie's token and the session. Nil
    /// for a wrong name or password and for an account that is not an operator's, all alike.
    public func startConsoleSession(accountName: String, password: String, logger: Logger) async throws -> (token: String, session: ConsoleSession)? {
        guard let (account, isOperator) = try await self.verifiedAccount(accountName: accountName, password: password, logger: logger), isOperator
        else { return nil }
        let token = Base64URL.encode(Self.randomBytes(32))
        let formToken = Base64URL.encode(Self.randomBytes(24))
        _ = try await translatingDatabaseErrors {
            try await self.client.query(
                """
                INSERT INTO console_sessions (token_hash, account_id, csrf, used_ms)
                VALUES (\(Self.hash(token)), \(account.id), \(formToken), \(self.clock.now))
                """, logger: logger)
        }
        return (token, ConsoleSession(account: account, formToken: formToken))
    }

    /// The session a console cookie holds, if it was used within `idleMs` and its account is still an operator's;
    /// each use moves the idle timeout on.
    public func consoleSession(token: String, idleMs: Int64, logger: Logger) async throws -> ConsoleSession? {
        let now = self.clock.now
        let rows = try await translatingDatabaseErrors {
            try await self.client.query(
                """
                UPDATE console_sessions s SET used_ms = \(now) FROM accounts a
                WHERE s.token_hash = \(Self.hash(token)) AND s.used_ms >= \(now - idleMs) AND a.id = s.account_id AND a.operator
                RETURNING a.id, a.name, a.user_record_name, s.csrf
                """, logger: logger)
        }
        for try await (id, name, recordName, formToken) in rows.decode((Int64, String, String, String).self) {
            return ConsoleSession(account: Account(id: id, name: name, userRecordName: recordName), formToken: formToken)
        }
        return nil
    }

    /// Ends a console session (signing out); idle ones go with `purgeExpired`.
    public func endConsoleSession(token: String, logger: Logger) async throws {
        _ = try await translatingDatabaseErrors {
            try await self.client.query("DELETE FROM console_sessions WHERE token_hash = \(Self.hash(token))", logger: logger)
        }
    }
}

/// One account as the console lists it.
public struct AccountSummary: Sendable {
    public var name: String
    public var createdMs: Int64
    public var isOperator: Bool
    public var hasPassword: Bool
}

extension CredentialStore {
    /// Accounts whose name contains `text` (all when empty), by name, at most `limit`.
    public func accounts(matching text: String, limit: Int = 100, logger: Logger) async throws -> [AccountSummary] {
        var found: [AccountSummary] = []
        let rows = try await translatingDatabaseErrors {
            try await self.client.query(
                """
                SELECT name, created_ms, operator, password_hash IS NOT NULL FROM accounts
                WHERE strpos(lower(name), lower(\(text))) > 0 ORDER BY name LIMIT \(limit)
                """, logger: logger)
        }
        for try await (name, created, isOperator, hasPassword) in rows.decode((String, Int64, Bool, Bool).self) {
            found.append(AccountSummary(name: name, createdMs: created, isOperator: isOperator, hasPassword: hasPassword))
        }
        return found
    }

    /// Ends every web auth session of an account (all its devices sign in again); the number ended, or nil when no
    /// account has that name. Other processes stop accepting the sessions within a second.
    public func endSessions(accountName: String, logger: Logger) async throws -> Int? {
        let now = self.clock.now
        let ended = try await self.client.transaction(logger: logger) { connection -> [Int64]? in
            guard
                let account = try await connection.query("SELECT id FROM accounts WHERE name = \(accountName)", logger: logger).decode(
                    Int64.self
                ).all().first
            else { return nil }
            try await connection.query(
                "UPDATE credentials SET revoked_ms = \(now) WHERE kind = 'web_auth' AND account_id = \(account) AND revoked_ms IS NULL",
                logger: logger)
            return try await connection.query(
                "UPDATE auth_sessions SET revoked_ms = \(now) WHERE account_id = \(account) AND revoked_ms IS NULL RETURNING id", logger: logger
            ).decode(Int64.self).all()
        }
        for session in ended ?? [] { self.sessions.forget(session) }
        self.cache.withLock { $0.removeAll() }
        return ended?.count
    }
}

/// A container API token as the console lists it: never the token, only its fingerprint.
public struct APITokenInfo: Sendable {
    /// The first 8 bytes of the token's SHA-256, in hex: enough to tell tokens apart, nothing to use one with.
    public var fingerprint: String
    public var label: String?
    public var createdMs: Int64
    public var revokedMs: Int64?
    /// When a request last used it (noted at most once a minute).
    public var lastUsedMs: Int64?
}

extension CredentialStore {
    /// Every container API token, oldest first.
    public func apiTokens(logger: Logger) async throws -> [APITokenInfo] {
        let rows = try await translatingDatabaseErrors {
            try await self.client.query(
                """
                SELECT encode(substring(token_hash FROM 1 FOR 8), 'hex'), label, created_ms, revoked_ms, last_used_ms FROM credentials
                WHERE kind = 'api' ORDER BY created_ms, token_hash
                """, logger: logger)
        }
        var tokens: [APITokenInfo] = []
        for try await (fingerprint, label, created, revoked, used) in rows.decode((String, String?, Int64, Int64?, Int64?).self) {
            tokens.append(APITokenInfo(fingerprint: fingerprint, label: label, createdMs: created, revokedMs: revoked, lastUsedMs: used))
        }
        return tokens
    }

    /// Revokes the live API token with this fingerprint; false when none matched. Every process stops accepting it
    /// within a second, as with `tokens revoke`.
    public func revokeAPIToken(fingerprint: String, logger: Logger) async throws -> Bool {
        let found = try await self.touchesRow(
            """
            UPDATE credentials SET revoked_ms = \(self.clock.now)
            WHERE kind = 'api' AND revoked_ms IS NULL AND encode(substring(token_hash FROM 1 FOR 8), 'hex') = \(fingerprint)
            RETURNING 1
            """, logger: logger)
        self.cache.withLock { $0.removeAll() }
        return found
    }
}
