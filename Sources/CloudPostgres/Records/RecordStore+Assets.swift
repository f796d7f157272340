import CloudCore
import CloudRuntime
import Logging
import PostgresNIO

extension RecordStore {
    /// Runs `publish` (moving verified bytes into place) and notes the asset for `database` (NOT_FOUND once its
    /// account is erased), under the lock the collector takes for the same asset: a collection either finishes before
    /// (and the bytes are placed again) or starts after (and sees the fresh row). Storing the same asset again refreshes
    /// its age.
    public func publishAsset(
        checksum: String, size: Int64, in databaseID: Int64, logger: Logger, publish: () async throws -> Void
    ) async throws {
        try await self.client.transaction(logger: logger) { connection in
            try await self.publishAsset(checksum: checksum, size: size, in: databaseID, on: connection, logger: logger, publish: publish)
        }
    }

    /// `publishAsset` inside the caller's transaction.
    func publishAsset(
        checksum: String, size: Int64, in databaseID: Int64, on connection: PostgresConnection, logger: Logger, publish: () async throws -> Void
    ) async throws {
        // An account erased before gets no bytes placed. One erased between here and the row (a narrow race) gets the
        // same answer; its bytes are then an orphan the collector's sweep removes. Not a lock on the database row:
        // that would hold the account's writes for as long as bytes move.
        let erased = Self.uploadToErasedDatabase
        var live = false
        for try await _ in try await connection.query("SELECT 1 FROM databases WHERE id = \(databaseID)", logger: logger) { live = true }
        guard live else { throw erased }
        try await Self.lockAsset(databaseID: databaseID, checksum: checksum, on: connection, logger: logger)
        try await publish()
        do {
            try await connection.query(
                """
                INSERT INTO assets (database_id, checksum, size, stored_ms) VALUES (\(databaseID), \(checksum), \(size), \(self.clock.now))
                ON CONFLICT (database_id, checksum) DO UPDATE SET stored_ms = EXCLUDED.stored_ms
                """, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23503" {
            throw erased
        }
    }

    /// A transaction lock on one asset of one database (hashed; a collision only serializes two assets).
    static func lockAsset(databaseID: Int64, checksum: String, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtext(\(String(databaseID)) || ':' || \(checksum))::int8)", logger: logger)
    }

    /// Removes blobs a crash left behind: published (renamed into place) but their row never committed. Each is
    /// checked again under its asset lock, so an upload publishing the same bytes right now keeps them. Returns
    /// how many went.
    public func collectOrphanBlobs(_ blobs: [(databaseID: Int64, checksum: String)], logger: Logger, remove: (Int64, String) async throws -> Void)
        async throws -> Int
    {
        // One query finds the blobs that have rows (nearly all); only the rest are checked one by one.
        let known = try await self.client.reading { connection in
            var known = Set<String>()
            for try await (databaseID, checksum) in try await connection.query(
                """
                SELECT a.database_id, a.checksum FROM assets a
                JOIN unnest(\(blobs.map(\.databaseID)), \(blobs.map(\.checksum))) AS b(database_id, checksum)
                    ON a.database_id = b.database_id AND a.checksum = b.checksum
                """, logger: logger
            ).decode((Int64, String).self) { known.insert("\(databaseID):\(checksum)") }
            return known
        }
        var removed = 0
        for (databaseID, checksum) in blobs where !known.contains("\(databaseID):\(checksum)") {
            let deleted = try await self.client.transaction(logger: logger) { connection -> Bool in
                try await Self.lockAsset(databaseID: databaseID, checksum: checksum, on: connection, logger: logger)
                let rows = try await connection.query(
                    "SELECT 1 FROM assets WHERE database_id = \(databaseID) AND checksum = \(checksum)", logger: logger)
                for try await _ in rows { return false }
                try await remove(databaseID, checksum)
                return true
            }
            if deleted { removed += 1 }
        }
        return removed
    }

    /// What an upload for a database that is gone (its account erased) is answered.
    public static let uploadToErasedDatabase = CloudError.notFound(
        "this upload's database no longer exists (its account was erased); nothing was stored")

    /// Bytes of assets stored for `database`, for its quota; `uploadToErasedDatabase` when it is gone.
    public func assetUsage(of databaseID: Int64, logger: Logger) async throws -> Int64 {
        try await self.client.reading { connection in
            for try await used in try await connection.query(
                "SELECT (SELECT coalesce(sum(size), 0)::int8 FROM assets WHERE database_id = d.id) FROM databases d WHERE d.id = \(databaseID)",
                logger: logger
            ).decode(Int64.self) { return used }
            throw Self.uploadToErasedDatabase
        }
    }

    /// Assets stored before `cutoffMs` that no live record references, removed one by one, each under its
    /// database's write lock (a write that references it either commits first, and it stays, or fails its asset
    /// check) and its asset lock (an upload of the same bytes waits). `remove` deletes the bytes inside that
    /// transaction. Returns how many went.
    public func collectUnreferencedAssets(storedBeforeMs cutoffMs: Int64, logger: Logger, remove: (Int64, String) async throws -> Void) async throws
        -> Int
    {
        let candidates = try await self.client.reading { connection in
            var found: [(Int64, String)] = []
            for try await row in try await connection.query(
                """
                SELECT a.database_id, a.checksum FROM assets a WHERE a.stored_ms < \(cutoffMs) AND NOT EXISTS (
                    SELECT 1 FROM records r JOIN zones z ON z.id = r.zone_id
                    WHERE z.database_id = a.database_id AND NOT r.deleted AND r.asset_refs @> ARRAY[a.checksum])
                LIMIT 1000
                """, logger: logger
            ).decode((Int64, String).self) { found.append(row) }
            return found
        }
        var removed = 0
        for (databaseID, checksum) in candidates {
            let deleted = try await self.client.transaction(logger: logger) { connection -> Bool in
                _ = try await Self.lockChangeSequence(
                    of: DatabaseRef(id: databaseID, scope: .private, ownerRecordName: ""), on: connection, logger: logger)
                try await Self.lockAsset(databaseID: databaseID, checksum: checksum, on: connection, logger: logger)
                var gone = false
                for try await _ in try await connection.query(
                    """
                    DELETE FROM assets a WHERE a.database_id = \(databaseID) AND a.checksum = \(checksum) AND a.stored_ms < \(cutoffMs) AND NOT EXISTS (
                        SELECT 1 FROM records r JOIN zones z ON z.id = r.zone_id
                        WHERE z.database_id = a.database_id AND NOT r.deleted AND r.asset_refs @> ARRAY[a.checksum])
                    RETURNING 1
                    """, logger: logger)
                { gone = true }
                if gone { try await remove(databaseID, checksum) }
                return gone
            }
            if deleted { removed += 1 }
        }
        return removed
    }

    /// Fails each saved record that holds an asset this database does not have (never uploaded here, or
    /// collected). Runs under the write lock, so the collector cannot remove it before the write commits.
    static func checkAssetsExist(_ plan: inout ModificationPlan, databaseID: Int64, on connection: PostgresConnection, logger: Logger) async throws {
        let saved = plan.writes.filter { !$0.deleted }
        let referenced = Set(saved.flatMap { FieldValue.assetChecksums(in: $0.fields) })
        guard !referenced.isEmpty else { return }
        var present = Set<String>()
        for try await checksum in try await connection.query(
            "SELECT checksum FROM assets WHERE database_id = \(databaseID) AND checksum = ANY(\(Array(referenced)))", logger: logger
        ).decode(String.self) { present.insert(checksum) }
        for record in saved {
            if let missing = FieldValue.assetChecksums(in: record.fields).sorted().first(where: { !present.contains($0) }) {
                plan.fail(
                    record.recordName,
                    .badRequest(
                        "record \(record.recordName): asset \(missing) was not uploaded to this database (or has expired); upload it with assets/upload"
                    ))
            }
        }
    }
}
