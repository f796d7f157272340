import CloudCore
import CloudRuntime
import Logging
import PostgresNIO

/// A change to a person's subscriptions (`subscriptions/modify`).
public enum SubscriptionChange: Sendable {
    /// Saves it; `mustExist` (CloudKit's `update`) fails when there is none of that id.
    case save(Subscription, mustExist: Bool)
    case delete(id: String)
}

/// A subscription as the courier matches it: where it lives and from which change on it fires.
public struct ActiveSubscription: Sendable {
    public var databaseID: Int64
    public var scope: DatabaseScope
    public var sinceSeq: Int64
    public var subscription: Subscription

    public init(databaseID: Int64, scope: DatabaseScope, sinceSeq: Int64, subscription: Subscription) {
        self.databaseID = databaseID
        self.scope = scope
        self.sinceSeq = sinceSeq
        self.subscription = subscription
    }
}

extension RecordStore {
    /// The account's subscriptions in `database` (all, or those with `ids`), by id, as saved (`definition`).
    public func subscriptions(of account: Int64, in database: DatabaseRef, ids: [String]? = nil, logger: Logger) async throws -> [String: JSONValue] {
        var found: [String: JSONValue] = [:]
        for try await (id, definition) in try await self.client.query(
            """
            SELECT subscription_id, definition::text FROM subscriptions
            WHERE account_id = \(account) AND database_id = \(database.id) AND (\(ids == nil) OR subscription_id = ANY(\(ids ?? [])))
            ORDER BY created_ms, subscription_id
            """, logger: logger
        ).decode((String, String).self) { found[id] = try JSONValue.parse(Array(definition.utf8)) }
        return found
    }

    /// Applies `changes` in order, in one transaction; each succeeds or fails alone. A new subscription fires on
    /// changes after it was saved. At most `limit` per account and database (QUOTA_EXCEEDED past it).
    public func modifySubscriptions(
        _ changes: [SubscriptionChange], of account: Int64, in database: DatabaseRef, limit: Int, logger: Logger
    ) async throws -> [Result<JSONValue?, CloudError>] {
        try await self.client.transaction(logger: logger) { connection in
            var head: Int64 = 0
            for try await seq in try await connection.query("SELECT change_seq FROM databases WHERE id = \(database.id)", logger: logger)
                .decode(Int64.self)
            { head = seq }
            // Serialises one account's modifications, so the count below stays true until commit.
            try await connection.query("SELECT 1 FROM accounts WHERE id = \(account) FOR UPDATE", logger: logger)
            var existing = Set<String>()
            for try await id in try await connection.query(
                "SELECT subscription_id FROM subscriptions WHERE account_id = \(account) AND database_id = \(database.id)", logger: logger
            ).decode(String.self) { existing.insert(id) }
            var outcomes: [Result<JSONValue?, CloudError>] = []
            for change in changes {
                switch change {
                case .save(let subscription, let mustExist):
                    let exists = existing.contains(subscription.id)
                    if mustExist, !exists {
                        outcomes.append(.failure(CloudError(.notFound, "subscription \(subscription.id) does not exist")))
                        continue
                    }
                    if !exists, existing.count >= limit {
                        outcomes.append(
                            .failure(CloudError(.quotaExceeded, "an account may keep at most \(limit) subscriptions per database; delete one first")))
                        continue
                    }
                    let definition = JSONWriter.encode(subscription.definition)
                    try await connection.query(
                        """
                        INSERT INTO subscriptions (database_id, account_id, subscription_id, kind, zone_name, record_type, fires_on, fires_once,
                            definition, since_seq, created_ms)
                        VALUES (\(database.id), \(account), \(subscription.id), \(subscription.kind.rawValue), \(subscription.zoneName),
                            \(subscription.query?.recordType), \(subscription.firesOn.rawValue), \(subscription.firesOnce), \(definition)::jsonb,
                            \(head), \(self.clock.now))
                        ON CONFLICT (account_id, database_id, subscription_id) DO UPDATE SET kind = EXCLUDED.kind, zone_name = EXCLUDED.zone_name,
                            record_type = EXCLUDED.record_type, fires_on = EXCLUDED.fires_on, fires_once = EXCLUDED.fires_once,
                            definition = EXCLUDED.definition
                        """, logger: logger)
                    existing.insert(subscription.id)
                    outcomes.append(.success(subscription.definition))
                case .delete(let id):
                    guard existing.remove(id) != nil else {
                        outcomes.append(.failure(CloudError(.notFound, "subscription \(id) does not exist")))
                        continue
                    }
                    try await connection.query(
                        "DELETE FROM subscriptions WHERE account_id = \(account) AND database_id = \(database.id) AND subscription_id = \(id)",
                        logger: logger)
                    outcomes.append(.success(nil))
                }
            }
            return outcomes
        }
    }

    /// Every subscription of the account in a container's environment (its private database and the public one),
    /// with its definition for the caller to parse.
    public func subscriptions(of account: Int64, container: String, environment: String, logger: Logger) async throws -> [(
        databaseID: Int64, scope: DatabaseScope, sinceSeq: Int64, definition: JSONValue
    )] {
        var found: [(Int64, DatabaseScope, Int64, JSONValue)] = []
        for try await (databaseID, scope, since, definition) in try await self.client.query(
            """
            SELECT s.database_id, d.scope, s.since_seq, s.definition::text FROM subscriptions s JOIN databases d ON d.id = s.database_id
            WHERE s.account_id = \(account) AND d.container = \(container) AND d.environment = \(environment)
            ORDER BY s.created_ms, s.subscription_id
            """, logger: logger
        ).decode((Int64, String, Int64, String).self) {
            found.append((databaseID, DatabaseScope(rawValue: scope) ?? .private, since, try JSONValue.parse(Array(definition.utf8))))
        }
        return found
    }
}
