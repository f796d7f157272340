import CloudCore
import Foundation
import Logging
import PostgresNIO

/// What the canonical import and derived indexes need: whole-zone rewrites, records by type, the change head.
extension RecordStore {
    /// Rewrites records of several zones in one transaction: `decide` sees every record of each zone (live and
    /// deleted, by zone name) and returns the new versions to store per zone, which are checked against the
    /// schema in force. Zones that do not exist yet are created (also in the public database: this is the
    /// operator's import, not a device's `zones/modify`). With `commit: false` nothing is written (a dry run).
    /// Returns the number of versions written.
    @discardableResult
    public func rewriteZones(
        _ zoneNames: [String], in database: DatabaseRef, stamp: ChangeStamp, commit: Bool = true, logger: Logger,
        _ decide: @Sendable ([String: [String: Record]]) throws -> [String: [RecordDraft]]
    ) async throws -> Int {
        for name in zoneNames { try FieldName.validate(name, path: "import", what: "zone name") }
        return try await self.client.transaction(logger: logger) { connection in
            let (first, _, schema) = try await self.beginWrite(zoneName: defaultZoneName, in: database, on: connection, logger: logger)
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
            for try await row in try await connection.query(builder.query, logger: logger).decode(
                (String, String, String, Int64, Bool, String, Int64, String, String, Int64, String, String).self
            ) {
                let record = try Self.record(from: Self.snapshot((row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11)))
                stored[row.0, default: [:]][record.recordName] = record
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
                    var created: Int64 = 0
                    for try await id in try await connection.query(
                        "INSERT INTO zones (database_id, zone_name, change_seq, modified_ms) VALUES (\(database.id), \(name), \(seq), \(stamp.timestamp)) RETURNING id",
                        logger: logger
                    ).decode(Int64.self) { created = id }
                    zoneID = created
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
    }

    /// Every live record of `types` in a zone (every zone when `zoneName` is nil), with the database's change head
    /// they reflect (one snapshot), for callers that keep a derived index and rebuild it when the head moves.
    public func records(ofTypes types: [String], zoneName: String?, in database: DatabaseRef, logger: Logger) async throws -> (
        records: [Record], head: Int64
    ) {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: nil)
            builder.append(
                """
                SELECT d.change_seq, \(columns) FROM databases d JOIN zones z ON z.database_id = d.id AND (\(builder.bind(zoneName == nil)) OR z.zone_name = \(builder.bind(zoneName ?? ""))) AND NOT z.deleted
                JOIN records r ON r.zone_id = z.id AND NOT r.deleted AND r.record_type = ANY(\(builder.bind(types))::text[])
                WHERE d.id = \(builder.bind(database.id))
                """)
            var head: Int64 = 0
            var records: [Record] = []
            for try await row in try await connection.query(builder.query, logger: logger).decode(
                (Int64, String, String, Int64, Bool, String, Int64, String, String, Int64, String, String).self
            ) {
                head = row.0
                records.append(try Self.record(from: Self.snapshot((row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11))))
            }
            return (records, head)
        }
    }

    /// The database's last change number.
    public func changeHead(of database: DatabaseRef, logger: Logger) async throws -> Int64 {
        try await self.client.reading { connection in
            for try await head in try await connection.query("SELECT change_seq FROM databases WHERE id = \(database.id)", logger: logger).decode(
                Int64.self)
            {
                return head
            }
            return 0
        }
    }
}
