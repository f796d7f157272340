import CloudCore
import CloudRuntime
import Logging
import PostgresNIO

extension RecordStore {
    /// Every live zone of the database with its current token.
    public func listZones(in database: DatabaseRef, logger: Logger) async throws -> [ZoneInfo] {
        try await self.lookupZones(nil, in: database, logger: logger).compactMap { $0 }
    }

    /// The named zones (or all when `names` is nil); `nil` where a zone does not exist.
    public func lookupZones(_ names: [String]?, in database: DatabaseRef, logger: Logger) async throws -> [ZoneInfo?] {
        try await self.client.reading { connection in
            let rows = try await connection.query(
                """
                SELECT z.id, z.zone_name, greatest(z.change_seq, z.purged_seq) FROM zones z
                WHERE z.database_id = \(database.id) AND NOT z.deleted AND (\(names == nil) OR z.zone_name = ANY(\(names ?? [])))
                ORDER BY z.zone_name = \(defaultZoneName) DESC, z.zone_name
                """, logger: logger)
            var found: [String: ZoneInfo] = [:]
            var order: [String] = []
            // Each zone's token is at its own last change (as `changes/zone` answers it), not the database's head: a
            // zone nobody wrote to keeps its token while others change. Writers number changes under the database's
            // row lock, so no change of the zone below its `change_seq` can commit after this read.
            for try await (id, name, last) in rows.decode((Int64, String, Int64).self) {
                found[name] = ZoneInfo(zoneName: name, syncToken: self.token(.zone, in: database, zoneID: id, seq: last))
                order.append(name)
            }
            return (names ?? order).map { found[$0] }
        }
    }

    /// Creates and deletes zones in order; deleting a zone removes its records. In the public database only unlisted
    /// zones are created (`UnlistedZone`), and none is deleted.
    public func modifyZones(_ operations: [ZoneOperation], in database: DatabaseRef, logger: Logger) async throws -> [ZoneOutcome] {
        guard operations.count <= self.limits.maxOperations else {
            throw CloudError.badRequest("a request may hold at most \(self.limits.maxOperations) operations")
        }
        for operation in operations { try FieldName.validate(operation.zoneName, path: "zones/modify", what: "zone name") }
        let outcomes = try await self.client.transaction(logger: logger) { connection in
            try await self.modifyZones(operations, in: database, on: connection, logger: logger)
        }
        guard outcomes.contains(where: { if case .failed = $0 { false } else { true } }) else { return outcomes }
        self.changes.committed([database.id])
        return outcomes
    }

    /// `modifyZones` inside the caller's transaction, its operations checked already; the caller announces the change
    /// once it commits.
    func modifyZones(_ operations: [ZoneOperation], in database: DatabaseRef, on connection: PostgresConnection, logger: Logger) async throws
        -> [ZoneOutcome]
    {
        var head = try await Self.lockChangeSequence(of: database, on: connection, logger: logger)
        let now = self.clock.now
        var outcomes: [ZoneOutcome] = []
        for operation in operations {
            let name = operation.zoneName
            if name == defaultZoneName {
                outcomes.append(.failed(name, .badRequest("the default zone cannot be created or deleted")))
                continue
            }
            if database.scope == .public, let refusal = UnlistedZone.refusal(of: operation) {
                outcomes.append(.failed(name, refusal))
                continue
            }
            var existing: Int64?
            for try await id in try await connection.query(
                "SELECT id FROM zones WHERE database_id = \(database.id) AND zone_name = \(name) AND NOT deleted", logger: logger
            ).decode(Int64.self) { existing = id }
            switch operation {
            case .create:
                if let existing {
                    // Creating a zone that exists succeeds, as in CloudKit: clients create zones on every launch.
                    outcomes.append(.created(ZoneInfo(zoneName: name, syncToken: self.token(.zone, in: database, zoneID: existing, seq: head))))
                    continue
                }
                head += 1
                let newID = try await Self.insertZone(name, in: database, seq: head, now: now, on: connection, logger: logger)
                outcomes.append(.created(ZoneInfo(zoneName: name, syncToken: self.token(.zone, in: database, zoneID: newID, seq: head))))
            case .delete:
                guard let existing else {
                    outcomes.append(.failed(name, CloudError.zoneNotFound(name)))
                    continue
                }
                head += 1
                try await connection.query("DELETE FROM records WHERE zone_id = \(existing)", logger: logger)
                try await connection.query(
                    "UPDATE zones SET deleted = true, change_seq = \(head), modified_ms = \(now) WHERE id = \(existing)", logger: logger)
                outcomes.append(.deleted(name))
            }
        }
        try await connection.query("UPDATE databases SET change_seq = \(head) WHERE id = \(database.id)", logger: logger)
        return outcomes
    }

    /// Adds a live zone at change number `seq` and returns its id (the caller holds the database lock).
    static func insertZone(_ name: String, in database: DatabaseRef, seq: Int64, now: Int64, on connection: PostgresConnection, logger: Logger)
        async throws -> Int64
    {
        for try await id in try await connection.query(
            "INSERT INTO zones (database_id, zone_name, change_seq, modified_ms) VALUES (\(database.id), \(name), \(seq), \(now)) RETURNING id",
            logger: logger
        ).decode(Int64.self) { return id }
        throw CloudError(.internalError, "zone \(name) was not created")
    }

    /// Removes record and zone tombstones older than `cutoffMs` and raises the purge horizons, so tokens from
    /// before a removed tombstone get CHANGE_TOKEN_EXPIRED instead of a delta that silently lacks the deletion.
    public func purgeTombstones(olderThanMs cutoffMs: Int64, logger: Logger) async throws -> (records: Int, zones: Int) {
        try await self.client.transaction(logger: logger) { connection in
            var records = 0
            for try await count in try await connection.query(
                """
                WITH purged AS (DELETE FROM records WHERE deleted AND modified_ms < \(cutoffMs) RETURNING zone_id, change_seq),
                horizon AS (SELECT zone_id, max(change_seq) AS seq, count(*) AS n FROM purged GROUP BY zone_id),
                raised AS (UPDATE zones z SET purged_seq = greatest(z.purged_seq, h.seq) FROM horizon h WHERE z.id = h.zone_id RETURNING 1)
                SELECT coalesce(sum(n), 0)::int8 FROM horizon
                """, logger: logger
            ).decode(Int64.self) { records = Int(count) }
            var zones = 0
            for try await count in try await connection.query(
                """
                WITH purged AS (DELETE FROM zones WHERE deleted AND modified_ms < \(cutoffMs) RETURNING database_id, change_seq),
                horizon AS (SELECT database_id, max(change_seq) AS seq, count(*) AS n FROM purged GROUP BY database_id),
                raised AS (UPDATE databases d SET purged_seq = greatest(d.purged_seq, h.seq) FROM horizon h WHERE d.id = h.database_id RETURNING 1)
                SELECT coalesce(sum(n), 0)::int8 FROM horizon
                """, logger: logger
            ).decode(Int64.self) { zones = Int(count) }
            return (records, zones)
        }
    }
}
