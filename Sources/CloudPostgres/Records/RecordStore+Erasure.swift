import CloudCore
import CloudRuntime
import Logging
import PostgresNIO
import Synchronization

/// What erasing an account removed (docs/PRIVACY.md).
public struct AccountErasure: Sendable, Equatable {
    public var account: Account
    /// The ids of the account's databases, gone.
    public var databaseIDs: [Int64] = []
    public var databases: Int { self.databaseIDs.count }
    public var records = 0
    public var assets = 0
    /// The person's records of public databases (trip polls, votes), deleted.
    public var publicRecords = 0
}

extension RecordStore {
    /// The user record name that stands in for an erased person where others' data keeps a stamp of theirs.
    public static let erasedUserRecordName = "_erased"

    /// Erases the account named `name` and everything in it, at once: its private databases (zones, records, change
    /// history, stored answers, subscriptions, push tokens, asset rows), its sessions and tokens (refused on every
    /// process within the credential cache's second) and the account itself; then the bytes of its
    /// assets, through `removeBlob` (database id, checksum). Its records of public databases are deleted, and devices
    /// following those zones see them go. Nil when no account has that name.
    public func eraseAccount(
        name: String, logger: Logger, removeBlob: (Int64, String) async throws -> Void
    ) async throws -> AccountErasure? {
        guard let (accountID, userRecordName) = try await self.account(named: name, logger: logger) else { return nil }
        var erasure = AccountErasure(account: Account(id: accountID, name: name, userRecordName: userRecordName))
        erasure.publicRecords = try await self.deletePublicRecords(of: userRecordName, logger: logger)
        let (databases, blobs, records) = try await self.client.transaction(logger: logger) { connection in
            var databases: [Int64] = []
            // In the order of their ids, as a group of writes takes them (RecordStore+GroupWrite): never in a circle.
            for try await id in try await connection.query(
                "SELECT id FROM databases WHERE owner_account_id = \(accountID) ORDER BY id FOR UPDATE", logger: logger
            ).decode(Int64.self) { databases.append(id) }
            var blobs: [(Int64, String)] = []
            for try await blob in try await connection.query(
                "SELECT database_id, checksum FROM assets WHERE database_id = ANY(\(databases))", logger: logger
            ).decode((Int64, String).self) { blobs.append(blob) }
            var records = 0
            for try await count in try await connection.query(
                """
                WITH gone AS (DELETE FROM records WHERE zone_id IN (SELECT id FROM zones WHERE database_id = ANY(\(databases))) RETURNING 1)
                SELECT count(*) FROM gone
                """, logger: logger
            ).decode(Int.self) { records = count }
            for statement: PostgresQuery in [
                "DELETE FROM zones WHERE database_id = ANY(\(databases))",
                "DELETE FROM assets WHERE database_id = ANY(\(databases))",
                "DELETE FROM idempotent_writes WHERE database_id = ANY(\(databases))",
                // Subscriptions, push tokens' courier frames: ON DELETE CASCADE from databases and accounts.
                "DELETE FROM databases WHERE id = ANY(\(databases))",
                "DELETE FROM auth_sessions WHERE account_id = \(accountID)",
                // Credentials, console sessions, push tokens: ON DELETE CASCADE.
                "DELETE FROM accounts WHERE id = \(accountID)",
            ] {
                try await connection.query(statement, logger: logger)
            }
            return (databases, blobs, records)
        }
        self.databaseIDs.withLock { ids in ids = ids.filter { $0.key.ownerAccountID != accountID } }
        (erasure.databaseIDs, erasure.records, erasure.assets) = (databases, records, blobs.count)
        // Long polls held on the account's databases, here and in other processes, wake and find their database gone:
        // answered at once with what the next request gets (421; 401 for a courier token), not at their timeout.
        self.changes.committed(databases)
        for (databaseID, checksum) in blobs {
            // A blob left behind (a store that failed now) has no row any more: the asset collector's orphan sweep
            // removes it (docs/PRIVACY.md).
            do { try await removeBlob(databaseID, checksum) } catch {
                logger.warning("an erased account's asset stays until the orphan sweep", metadata: ["error": "\(error)"])
            }
        }
        logger.notice(
            "account erased",
            metadata: [
                "databases": "\(databases.count)", "records": "\(records)", "assets": "\(blobs.count)", "publicRecords": "\(erasure.publicRecords)",
            ])
        return erasure
    }

    func account(named name: String, logger: Logger) async throws -> (id: Int64, userRecordName: String)? {
        try await self.client.reading { connection in
            for try await row in try await connection.query("SELECT id, user_record_name FROM accounts WHERE name = \(name)", logger: logger)
                .decode((Int64, String).self)
            {
                return row
            }
            return nil
        }
    }

    /// Deletes the person's records of every public database, zone by zone through the normal write (so the
    /// deletions reach devices), then removes their tombstones at once (a vote's record name carries its voter's
    /// user record name), raising the zones' purge horizons so a device that had not fetched the deletion fetches the
    /// zone again instead (CHANGE_TOKEN_EXPIRED, as after any tombstone purge). What others changed last keeps
    /// their stamp; a stamp of the person's on anything left names no one.
    func deletePublicRecords(of userRecordName: String, logger: Logger) async throws -> Int {
        let theirs = try await self.client.reading { connection in
            var theirs: [Int64: [String: [String]]] = [:]
            for try await (databaseID, zone, record) in try await connection.query(
                """
                SELECT z.database_id, z.zone_name, r.record_name FROM records r
                JOIN zones z ON z.id = r.zone_id AND NOT z.deleted JOIN databases d ON d.id = z.database_id AND d.scope = 'public'
                WHERE r.created_by = \(userRecordName) AND NOT r.deleted
                """, logger: logger
            ).decode((Int64, String, String).self) { theirs[databaseID, default: [:]][zone, default: []].append(record) }
            return theirs
        }
        let stamp = ChangeStamp(timestamp: self.clock.now, userRecordName: Self.erasedUserRecordName, deviceID: Self.erasedUserRecordName)
        var deleted = 0
        for (databaseID, zones) in theirs {
            let database = DatabaseRef(id: databaseID, scope: .public, ownerRecordName: "_defaultOwner")
            for (zone, names) in zones {
                for start in stride(from: 0, to: names.count, by: self.limits.maxOperations) {
                    let operations = names[start..<min(start + self.limits.maxOperations, names.count)].map {
                        RecordOperation(type: .forceDelete, recordName: $0)
                    }
                    let result = try await self.modify(operations, zoneName: zone, atomic: false, in: database, stamp: stamp, logger: logger)
                    deleted += result.outcomes.filter { !$0.isFailure }.count
                }
            }
        }
        try await self.client.transaction(logger: logger) { connection in
            try await connection.query(
                """
                WITH purged AS (
                    DELETE FROM records r USING zones z, databases d
                    WHERE z.id = r.zone_id AND d.id = z.database_id AND d.scope = 'public' AND r.deleted AND r.created_by = \(userRecordName)
                    RETURNING r.zone_id, r.change_seq),
                horizon AS (SELECT zone_id, max(change_seq) AS seq FROM purged GROUP BY zone_id)
                UPDATE zones z SET purged_seq = greatest(z.purged_seq, h.seq) FROM horizon h WHERE z.id = h.zone_id
                """, logger: logger)
            try await connection.query(
                """
                UPDATE records r SET created_by = CASE WHEN created_by = \(userRecordName) THEN \(Self.erasedUserRecordName) ELSE created_by END,
                    modified_by = CASE WHEN modified_by = \(userRecordName) THEN \(Self.erasedUserRecordName) ELSE modified_by END
                FROM zones z JOIN databases d ON d.id = z.database_id AND d.scope = 'public'
                WHERE z.id = r.zone_id AND (r.created_by = \(userRecordName) OR r.modified_by = \(userRecordName))
                """, logger: logger)
        }
        return deleted
    }
}
