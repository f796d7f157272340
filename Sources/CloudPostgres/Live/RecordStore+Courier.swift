import CloudCore
import CloudRuntime
import Foundation
import Logging
import PostgresNIO

/// A push token from `tokens/create`: whose it is, where, and until when.
public struct CourierToken: Sendable {
    let hash: Data
    public var accountID: Int64
    public var userRecordName: String
    public var container: String
    public var environment: String
    /// The device that asked for it, whose own changes it is not told about.
    public var deviceID: String?
    public var expiresMs: Int64
    /// The databases it is told about: the person's private one and the public one.
    public var databaseIDs: [Int64]

    /// What a courier poll is answered for a token this server does not hold: never issued, removed after it expired,
    /// or gone with its account (an erasure ends a poll held on it with this answer).
    public static let unknown = CloudError(.authenticationFailed, "unknown push token; create one with tokens/create")
}

/// The web courier's state (docs/SYNC.md, "Live sync"): per token, how far each database's changes have been
/// turned into notices, and the notices not yet delivered, first in first out. Notices are computed from the
/// change log when a courier poll asks, not when a write commits: a write costs nothing more for having
/// subscribers, and a token nobody polls costs nothing at all.
extension RecordStore {
    /// Most notices one subscription yields per computation; past it the last one says `pruned` (fetch instead).
    static let noticesPerSubscription = 50

    /// Removes expired push tokens with their positions and queued notices (the tombstone purge job).
    public func purgeExpiredCourierTokens(logger: Logger) async throws {
        try await self.client.query("DELETE FROM courier_tokens WHERE expires_ms < \(self.clock.now)", logger: logger)
    }

    /// A new push token for `account`, told about changes in `databases` from now on.
    public func createCourierToken(
        account: Int64, container: String, environment: String, deviceID: String?, lifetimeMs: Int64, databases: [DatabaseRef], logger: Logger
    ) async throws -> (token: String, expiresMs: Int64) {
        let token = Base64URL.encode(CredentialStore.randomBytes(32))
        let hash = CredentialStore.hash(token)
        let now = self.clock.now
        try await self.client.transaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO courier_tokens (token_hash, account_id, container, environment, device_id, created_ms, expires_ms)
                VALUES (\(hash), \(account), \(container), \(environment), \(deviceID), \(now), \(now + lifetimeMs))
                """, logger: logger)
            try await connection.query(
                """
                INSERT INTO courier_positions (token_hash, database_id, seq)
                SELECT \(hash), id, change_seq FROM databases WHERE id = ANY(\(databases.map(\.id)))
                """, logger: logger)
        }
        return (token, now + lifetimeMs)
    }

    /// The token's record, or nil when it is unknown (never issued, or removed after it expired).
    public func courierToken(_ token: String, logger: Logger) async throws -> CourierToken? {
        let hash = CredentialStore.hash(token)
        for try await (account, user, container, environment, device, expires, databases) in try await self.client.query(
            """
            SELECT t.account_id, a.user_record_name, t.container, t.environment, t.device_id, t.expires_ms,
                array(SELECT database_id FROM courier_positions WHERE token_hash = t.token_hash ORDER BY database_id)
            FROM courier_tokens t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = \(hash)
            """, logger: logger
        ).decode((Int64, String, String, String, String?, Int64, [Int64]).self) {
            return CourierToken(
                hash: hash, accountID: account, userRecordName: user, container: container, environment: environment, deviceID: device,
                expiresMs: expires, databaseIDs: databases)
        }
        return nil
    }

    /// The token's next notice, rendered by `frame`, or nil when there is none yet; `CourierToken.unknown` when the
    /// token is gone (its account erased while a poll waited). When none is queued, the changes since the token's
    /// positions are matched against `subscriptions` (in order of change), queued, and the positions advanced;
    /// subscriptions that fire once and fired are deleted. Concurrent polls of one token take turns (the token's row
    /// is locked), so each notice is delivered once.
    public func nextNotice(
        for token: CourierToken, subscriptions: [ActiveSubscription], logger: Logger, frame: @Sendable (ChangeNotice) -> String
    ) async throws -> String? {
        try await self.client.transaction(logger: logger) { connection in
            var exists = false
            for try await _ in try await connection.query("SELECT 1 FROM courier_tokens WHERE token_hash = \(token.hash) FOR UPDATE", logger: logger)
            {
                exists = true
            }
            guard exists else { throw CourierToken.unknown }
            if let queued = try await Self.popFrame(token, on: connection, logger: logger) { return queued }
            var positions: [Int64: (seq: Int64, head: Int64)] = [:]
            for try await (database, seq, head) in try await connection.query(
                """
                SELECT p.database_id, p.seq, d.change_seq FROM courier_positions p JOIN databases d ON d.id = p.database_id
                WHERE p.token_hash = \(token.hash)
                """, logger: logger
            ).decode((Int64, Int64, Int64).self) { positions[database] = (seq, head) }
            var notices: [(seq: Int64, notice: ChangeNotice)] = []
            var fired: [ActiveSubscription] = []
            for active in subscriptions {
                guard let position = positions[active.databaseID] else { continue }
                let since = max(position.seq, active.sinceSeq)
                guard since < position.head else { continue }
                let found = try await Self.notices(of: active, after: since, excludingDevice: token.deviceID, on: connection, logger: logger)
                if !found.isEmpty, active.subscription.firesOnce {
                    notices.append(found[0])
                    fired.append(active)
                } else {
                    notices += found
                }
            }
            for (database, position) in positions where position.head > position.seq {
                try await connection.query(
                    "UPDATE courier_positions SET seq = \(position.head) WHERE token_hash = \(token.hash) AND database_id = \(database)",
                    logger: logger)
            }
            for active in fired {
                try await connection.query(
                    """
                    DELETE FROM subscriptions WHERE account_id = \(token.accountID) AND database_id = \(active.databaseID)
                    AND subscription_id = \(active.subscription.id)
                    """, logger: logger)
            }
            guard !notices.isEmpty else { return nil }
            let frames = notices.sorted { $0.seq < $1.seq }.map { frame($0.notice) }
            try await connection.query(
                """
                INSERT INTO courier_frames (token_hash, frame)
                SELECT \(token.hash), f.frame FROM unnest(\(frames)::text[]) WITH ORDINALITY AS f(frame, n) ORDER BY f.n
                """,
                logger: logger)
            return try await Self.popFrame(token, on: connection, logger: logger)
        }
    }

    static func popFrame(_ token: CourierToken, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        for try await frame in try await connection.query(
            """
            DELETE FROM courier_frames WHERE id = (SELECT id FROM courier_frames WHERE token_hash = \(token.hash) ORDER BY id LIMIT 1)
            RETURNING frame
            """, logger: logger
        ).decode(String.self) { return frame }
        return nil
    }

    /// The notices one subscription yields for changes after `since`, each with the change number it is about.
    static func notices(
        of active: ActiveSubscription, after since: Int64, excludingDevice device: String?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(seq: Int64, notice: ChangeNotice)] {
        let subscription = active.subscription
        var builder = SQLBuilder()
        var conditions = [
            "z.database_id = \(builder.bind(active.databaseID))", "r.change_seq > \(builder.bind(since))",
        ]
        if let zone = subscription.zoneName {
            conditions.append("z.zone_name = \(builder.bind(zone))")
        } else if active.scope == .public {
            // Only a subscription that names an unlisted zone hears of it: a notice would reveal its name.
            conditions.append("NOT starts_with(z.zone_name, \(builder.bind(UnlistedZone.prefix)))")
        }
        if let device { conditions.append("r.modified_device <> \(builder.bind(device))") }
        guard subscription.kind == .query, let query = subscription.query else {
            // A zone or database subscription: one notice for everything since, at the first change.
            builder.append(
                """
                SELECT min(r.change_seq), min(z.zone_name) FROM records r JOIN zones z ON z.id = r.zone_id
                WHERE \(conditions.joined(separator: " AND "))
                """)
            for try await (seq, zone) in try await connection.query(builder.query, logger: logger).decode((Int64?, String?).self) {
                guard let seq else { return [] }
                let zoneName = subscription.kind == .zone ? (subscription.zoneName ?? zone) : nil
                return [(seq, ChangeNotice(subscriptionID: subscription.id, kind: subscription.kind, scope: active.scope, zoneName: zoneName))]
            }
            return []
        }
        conditions.append("r.record_type = \(builder.bind(query.recordType))")
        // A tombstone keeps no fields, so a filtered subscription cannot tell whether a deleted record matched.
        if !query.filters.isEmpty {
            conditions.append("NOT r.deleted")
            for filter in query.filters { conditions.append(try QuerySQL.condition(for: filter, &builder)) }
        }
        builder.append(
            """
            SELECT r.change_seq, r.record_name, z.zone_name, r.deleted, r.created_ms = r.modified_ms FROM records r JOIN zones z ON z.id = r.zone_id
            WHERE \(conditions.joined(separator: " AND ")) ORDER BY r.change_seq LIMIT \(builder.bind(Self.noticesPerSubscription * 4))
            """)
        var notices: [(Int64, ChangeNotice)] = []
        for try await (seq, name, zone, deleted, created) in try await connection.query(builder.query, logger: logger).decode(
            (Int64, String, String, Bool, Bool).self)
        {
            let trigger: Subscription.Triggers = deleted ? .delete : created ? .create : .update
            guard subscription.firesOn.contains(trigger) else { continue }
            if notices.count == Self.noticesPerSubscription {
                notices[notices.count - 1].1.pruned = true
                break
            }
            notices.append(
                (
                    seq,
                    ChangeNotice(
                        subscriptionID: subscription.id, kind: .query, scope: active.scope, zoneName: zone, recordName: name, trigger: trigger)
                ))
        }
        return notices
    }
}
