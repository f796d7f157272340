import CloudCore
import CloudRuntime
import Logging
import PostgresNIO
import Synchronization

/// Web auth sessions: signed tokens that rotate on every answer, grace periods, reuse detection, sign-out
/// (docs/AUTH.md). The tokens and what this process knows of their sessions are `WebAuthSessions`.
extension CredentialStore {
    /// A new session. Its id is random (63 bits) rather than from a sequence: a restore rolls a sequence back, and the
    /// id of a session the restore lost would be handed to someone else, whose account its tokens would then open.
    func startSession(for account: Account, idleMs: Int64, on connection: PostgresConnection, logger: Logger) async throws -> String {
        let now = self.clock.now
        let id = Int64.random(in: 1...Int64.max)
        try await connection.query(
            "INSERT INTO auth_sessions (id, account_id, idle_ms, created_ms) VALUES (\(id), \(account.id), \(idleMs), \(now))", logger: logger)
        return try await self.sessions.token(.init(sessionID: id, generation: 0, issuedMs: now), logger: logger)
    }

    /// The grant of a live web auth token, or `nil`. A token used again more than `graceMs` after its successor
    /// was first used means two parties hold the session: the whole session ends (docs/AUTH.md).
    public func grant(forWebAuthToken token: String, graceMs: Int64, logger: Logger) async throws -> WebAuthGrant? {
        let now = self.clock.now
        let claims: WebAuthSessions.Claims
        if let signed = try await self.sessions.claims(of: token, logger: logger) {
            claims = signed
        } else {
            // A token of the row-per-token scheme (before migration 0007): the newest of its chain is generation 0.
            guard case .webAuth(let row) = try await self.resolve(token, logger: logger), row.expiresMs > now else { return nil }
            if let retired = row.retiredMs, now > retired + graceMs {
                try await self.endSession(after: "a retired web auth token was used again", row.sessionID, logger: logger)
                return nil
            }
            claims = .init(sessionID: row.sessionID, generation: 0, issuedMs: now)
        }
        guard let session = try await self.sessions.session(claims.sessionID, logger: logger), !session.revoked,
            now < claims.issuedMs + session.idleMs
        else { return nil }
        if claims.generation > session.newest {
            self.sessions.noteUse(session: claims.sessionID, generation: claims.generation, at: now)
        } else if claims.generation < session.newest {
            // Retired when its successor was first used. Not recorded anywhere means long ago (purged), unless the
            // newest use is so recent that another process may not have written it yet.
            let retired = try await self.sessions.firstUse(session: claims.sessionID, generation: claims.generation + 1, logger: logger)
            let recent = now - session.newestUsedMs < 2_000
            if retired.map({ now > $0 + graceMs }) ?? !recent {
                try await self.endSession(after: "a retired web auth token was used again", claims.sessionID, logger: logger)
                return nil
            }
        }
        return WebAuthGrant(account: session.account, sessionID: claims.sessionID, generation: claims.generation)
    }

    /// The token that replaces `grant`'s in the answer: the next generation of its session, signed, with no write.
    /// Its first use retires the token it replaced (valid for the grace period more); a token whose successor never
    /// arrives (a lost answer) stays valid.
    public func rotate(_ grant: WebAuthGrant, logger: Logger) async throws -> String {
        try await self.sessions.token(.init(sessionID: grant.sessionID, generation: grant.generation + 1, issuedMs: self.clock.now), logger: logger)
    }

    /// Writes the first uses of web auth tokens noted so far (the server does so 4 times a second).
    public func writeTokenUses(logger: Logger) async { await self.sessions.writeUses(logger: logger) }

    /// Signs out: revokes the session `token` belongs to. Unknown tokens are ignored.
    public func endSession(token: String, logger: Logger) async throws {
        guard let session = try await self.session(of: token, logger: logger) else { return }
        try await self.endSession(session, logger: logger)
    }

    /// The session a web auth token (signed, or of the row-per-token scheme) belongs to.
    private func session(of token: String, logger: Logger) async throws -> Int64? {
        if let claims = try await self.sessions.claims(of: token, logger: logger) { return claims.sessionID }
        if case .webAuth(let row) = try await self.resolve(token, logger: logger) { return row.sessionID }
        return nil
    }

    private func endSession(after reason: String, _ sessionID: Int64, logger: Logger) async throws {
        logger.warning("\(reason): ending its session", metadata: ["session": "\(sessionID)"])
        try await self.endSession(sessionID, logger: logger)
    }

    @discardableResult
    func endSession(_ sessionID: Int64, logger: Logger) async throws -> Bool {
        let now = self.clock.now
        let ended = try await self.touchesRow(
            """
            WITH legacy AS (UPDATE credentials SET revoked_ms = \(now) WHERE session_id = \(sessionID) AND revoked_ms IS NULL)
            UPDATE auth_sessions SET revoked_ms = \(now) WHERE id = \(sessionID) AND revoked_ms IS NULL RETURNING 1
            """, logger: logger)
        self.sessions.forget(sessionID)
        self.cache.withLock { $0.removeAll() }
        return ended
    }
}
