import CloudCore
import Foundation
import Logging
import PostgresNIO

/// What the canonical import and derived indexes need: whole-zone rewrites, records by type, the change head.
extension RecordStore {
    /// Rewrites records of a zone in one transaction: `decide` sees every record of the zone (live and deleted)
    /// and returns the new versions to store, which are checked against the schema in force. With
    /// `commit: false` nothing is written (a dry run). Returns the number of versions written.
    @discardableResult
    public func rewriteZone(
        _ zoneName: String, in database: DatabaseRef, stamp: ChangeStamp, commit: Bool = true, logger: Logger,
        _ decide: @Sendable ([String: Record]) throws -> [RecordDraft]
    ) async throws -> Int {
        try await self.client.transaction(logger: logger) { connection in
            let (head, zoneID, schema) = try await self.beginWrite(zoneName: zoneName, in: database, on: connection, logger: logger)
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: nil)
            builder.append("SELECT \(columns) FROM records r WHERE r.zone_id = \(builder.bind(zoneID))")
            var stored: [String: Record] = [:]
            for try await columns in try await connection.query(builder.query, logger: logger).decode(RecordColumns.self) {
                let record = try Self.record(from: Self.snapshot(columns))
                stored[record.recordName] = record
            }
            let drafts = try decide(stored)
            guard commit, !drafts.isEmpty else { return 0 }
            var seq = head
            let writes = try drafts.map { draft -> Record in
                try schema?.validate(recordType: draft.recordType, fields: draft.fields, in: database.scope, path: draft.recordName)
                seq += 1
                let current = stored[draft.recordName].flatMap { $0.deleted ? nil : $0 }
                return Record(
                    recordName: draft.recordName, recordType: draft.recordType, changeSeq: seq, fields: draft.fields,
                    created: current?.created ?? stamp, modified: stamp)
            }
            try await Self.store(writes, zoneID: zoneID, databaseID: database.id, lastSeq: seq, on: connection, logger: logger)
            return writes.count
        }
    }

    /// Every live record of `types` in a zone, with the database's change head they reflect (one snapshot), for
    /// callers that keep a derived index and rebuild it when the head moves.
    public func records(ofTypes types: [String], zoneName: String, in database: DatabaseRef, logger: Logger) async throws -> (
        records: [Record], head: Int64
    ) {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: nil)
            builder.append(
                """
                SELECT d.change_seq, \(columns) FROM databases d JOIN zones z ON z.database_id = d.id AND z.zone_name = \(builder.bind(zoneName)) AND NOT z.deleted
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
