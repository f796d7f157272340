import CloudCore
import Foundation
import Logging
import PostgresNIO

/// Row mapping: the record columns every read selects, and their decoding into snapshots and records.
extension RecordStore {
    /// The columns `snapshot(from:)` decodes, with the fields expression limited to `desiredKeys`.
    static func recordColumns(_ builder: inout SQLBuilder, desiredKeys: [String]?) -> String {
        let fields: String
        if let desiredKeys {
            fields = Self.fields(limitedTo: builder.bind(desiredKeys))
        } else {
            fields = "r.fields::text"
        }
        return ["record_name", "record_type", "change_seq", "deleted"].map { "r.\($0)" }.joined(separator: ", ")
            + ", \(fields), "
            + ["created_ms", "created_by", "created_device", "modified_ms", "modified_by", "modified_device"].map { "r.\($0)" }.joined(
                separator: ", ")
    }

    /// Record `r`'s fields as JSON text, only those named in the text array `keys` (an SQL expression).
    static func fields(limitedTo keys: String) -> String {
        "(SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(r.fields) WHERE key = ANY(\(keys)::text[]))::text"
    }

    /// The records of zone `zone` named in the text array `names` (SQL expressions), each found by its primary key:
    /// `FROM \(recordsNamed(…)) r`. With `zone_id = … AND record_name = ANY(…)` the planner reads the whole zone and
    /// filters when it has no statistics of the table yet (a new database, a fresh load): one lookup read 1,600 rows
    /// to find one. Not for a prepared statement: its estimate depends on the number of names, so PostgreSQL would
    /// plan it at every execution instead of keeping a generic plan.
    static func recordsNamed(_ names: String, inZone zone: String) -> String {
        """
        (SELECT found.* FROM unnest(\(names)::text[]) AS n(name)
            CROSS JOIN LATERAL (SELECT * FROM records WHERE zone_id = \(zone) AND record_name = n.name LIMIT 1) found)
        """
    }

    typealias RecordColumns = (String, String, Int64, Bool, String, Int64, String, String, Int64, String, String)

    /// The record columns of a row from `offset` on, nil when the row has no record there (an outer join found none).
    static func recordColumns(in cells: PostgresRandomAccessRow, from offset: Int) throws -> RecordColumns? {
        guard let name = try cells[offset].decode(String?.self) else { return nil }
        return (
            name, try cells[offset + 1].decode(String.self), try cells[offset + 2].decode(Int64.self), try cells[offset + 3].decode(Bool.self),
            try cells[offset + 4].decode(String.self), try cells[offset + 5].decode(Int64.self), try cells[offset + 6].decode(String.self),
            try cells[offset + 7].decode(String.self), try cells[offset + 8].decode(Int64.self), try cells[offset + 9].decode(String.self),
            try cells[offset + 10].decode(String.self)
        )
    }

    static func snapshot(_ c: RecordColumns) -> RecordSnapshot {
        RecordSnapshot(
            recordName: c.0, recordType: c.1, changeSeq: c.2, deleted: c.3, fieldsJSON: c.4,
            created: ChangeStamp(timestamp: c.5, userRecordName: c.6, deviceID: c.7),
            modified: ChangeStamp(timestamp: c.8, userRecordName: c.9, deviceID: c.10))
    }

    /// A stored record with its fields parsed.
    static func record(from snapshot: RecordSnapshot) throws -> Record {
        let stored = try JSONValue.parse(Array(snapshot.fieldsJSON.utf8)).objectValue ?? [:]
        return Record(
            recordName: snapshot.recordName, recordType: snapshot.recordType, changeSeq: snapshot.changeSeq,
            deleted: snapshot.deleted, fields: stored.compactMapValues(FieldValue.init(stored:)),
            encodedFields: snapshot.fieldsJSON, created: snapshot.created, modified: snapshot.modified)
    }

    static func loadRecords(_ names: [String], zoneID: Int64, on connection: PostgresConnection, logger: Logger) async throws -> [String: Record] {
        var builder = SQLBuilder()
        let columns = Self.recordColumns(&builder, desiredKeys: nil)
        builder.append("SELECT \(columns) FROM \(Self.recordsNamed(builder.bind(names), inZone: builder.bind(zoneID))) r")
        var records: [String: Record] = [:]
        for try await columns in try await connection.query(builder.query, logger: logger).decode(RecordColumns.self) {
            let record = try Self.record(from: Self.snapshot(columns))
            records[record.recordName] = record
        }
        return records
    }
}
