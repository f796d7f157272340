import CloudCore
import Foundation
import Logging
import PostgresNIO

/// What the canonical import and derived indexes need: whole-zone rewrites, records by type, the change head.
extension RecordStore {
    /// Rewrites records of several zones in one transaction: `decide` sees every record of each zone (live and
    /// deleted, by zone name; only those named in `only` when it is given, as a feed updating a few games does) and
    /// returns the new versions to store per zone, which are checked against the schema in force. Zones that do not exist yet are created (also in the public database: this is the
    /// operator's import, not a device's `zones/modify`). With `commit: false` nothing is written (a dry run).
    /// Returns the number of versions written.
    @discardableResult
    public func rewriteZones(
        _ zoneNames: [String], in database: DatabaseRef, only recordNames: [String]? = nil, stamp: ChangeStamp, commit: Bool = true,
        logger: Logger,
        _ decide: @Sendable ([String: [String: Record]]) throws -> [String: [RecordDraft]]
    ) async throws -> Int {
        let written = try await self.client.transaction(logger: logger) { connection in
            try await self.rewriteZones(
                zoneNames, in: database, only: recordNames, stamp: stamp, commit: commit, on: connection, logger: logger, decide)
        }
        if written > 0 { self.changes.committed([database.id]) }
        return written
    }

    /// `rewriteZones` inside the caller's transaction; the caller announces the change once it commits.
    func rewriteZones(
        _ zoneNames: [String], in database: DatabaseRef, only recordNames: [String]? = nil, stamp: ChangeStamp, commit: Bool = true,
        on connection: PostgresConnection, logger: Logger,
        _ decide: @Sendable ([String: [String: Record]]) throws -> [String: [RecordDraft]]
    ) async throws -> Int {
        for name in zoneNames { try FieldName.validate(name, path: "import", what: "zone name") }
        let (first, _, schema, _) = try await self.beginWrite(zoneName: defaultZoneName, in: database, on: connection, logger: logger)
        var seq = first
        var zoneIDs: [String: Int64] = [:]
        for try await (id, name) in try await connection.query(
            "SELECT id, zone_name FROM zones WHERE database_id = \(database.id) AND NOT deleted AND zone_name = ANY(\(zoneNames))", logger: logger
        ).decode((Int64, String).self) { zoneIDs[name] = id }
        var stored: [String: [String: Record]] = [:]
        for name in zoneNames { stored[name] = [:] }
        var builder = SQLBuilder()
        let columns = Self.recordColumns(&builder, desiredKeys: nil)
        builder.append(
            "SELECT z.zone_name, \(columns) FROM records r JOIN zones z ON z.id = r.zone_id WHERE r.zone_id = ANY(\(builder.bind(Array(zoneIDs.values))))"
        )
        if let recordNames { builder.append(" AND r.record_name = ANY(\(builder.bind(recordNames)))") }
        for try await row in try await connection.query(builder.query, logger: logger) {
            var cells = RowCells(row)
            let zoneName: String = try cells.next()
            guard let snapshot = try Self.snapshot(from: &cells) else { throw RowCells.missing }
            let record = try Self.record(from: snapshot)
            stored[zoneName, default: [:]][record.recordName] = record
        }
        let drafts = try decide(stored)
        guard commit else { return 0 }
        var written = 0
        for name in zoneNames {
            guard let zoneDrafts = drafts[name], !zoneDrafts.isEmpty else { continue }
            let zoneID: Int64
            if let existing = zoneIDs[name] {
                zoneID = existing
            } else {
                seq += 1
                zoneID = try await Self.insertZone(name, in: database, seq: seq, now: stamp.timestamp, on: connection, logger: logger)
            }
            let writes = try zoneDrafts.map { draft -> Record in
                try schema?.validate(recordType: draft.recordType, fields: draft.fields, in: database.scope, path: draft.recordName)
                seq += 1
                let current = stored[name]?[draft.recordName].flatMap { $0.deleted ? nil : $0 }
                return Record(
                    recordName: draft.recordName, recordType: draft.recordType, changeSeq: seq, fields: draft.fields,
                    created: current?.created ?? stamp, modified: stamp)
            }
            try await Self.store(writes, zoneID: zoneID, databaseID: database.id, lastSeq: seq, on: connection, logger: logger)
            written += writes.count
        }
        return written
    }

    /// Every live record of `types` in the database's listed zones, in one snapshot, for callers that keep a derived
    /// index and rebuild it when `listedZonesHead` moves. Unlisted zones (a trip poll's, in the public database) hold
    /// no data shared with everyone.
    /// With `changedAfter`, only the records changed after that point, deleted ones included (to update such an
    /// index rather than rebuild it). With `zone`, only that zone's.
    public func records(
        ofTypes types: [String], in database: DatabaseRef, zone: String? = nil, changedAfter: Int64? = nil, logger: Logger
    ) async throws -> [Record] {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: nil)
            let which = changedAfter.map { "r.change_seq > \(builder.bind($0))" } ?? "NOT r.deleted"
            builder.append(
                """
                SELECT \(columns) FROM zones z
                JOIN records r ON r.zone_id = z.id AND \(which) AND r.record_type = ANY(\(builder.bind(types))::text[])
                WHERE z.database_id = \(builder.bind(database.id)) AND NOT z.deleted
                AND NOT starts_with(z.zone_name, \(builder.bind(UnlistedZone.prefix)))
                """)
            if let zone { builder.append(" AND z.zone_name = \(builder.bind(zone))") }
            var records: [Record] = []
            for try await row in try await connection.query(builder.query, logger: logger) {
                records.append(try Self.record(from: Self.snapshot(row)))
            }
            return records
        }
    }

    /// The last change to the database's listed zones. Unlike the database's head it stays put when only an unlisted
    /// zone changes (every vote in a trip poll of the public database), so what is built from `records(ofTypes:)` is
    /// rebuilt only when it may have changed.
    public func listedZonesHead(of database: DatabaseRef, logger: Logger) async throws -> Int64 {
        try await self.client.reading { connection in
            let rows = try await connection.query(
                """
                SELECT coalesce(max(change_seq), 0) FROM zones
                WHERE database_id = \(database.id) AND NOT deleted AND NOT starts_with(zone_name, \(UnlistedZone.prefix))
                """, logger: logger)
            for try await head in rows.decode(Int64.self) { return head }
            return 0
        }
    }
}
