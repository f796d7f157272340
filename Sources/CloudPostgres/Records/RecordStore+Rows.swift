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

    /// The record columns (`recordColumns`) at the cells' position, nil when the row has none there (an outer join
    /// found none).
    static func snapshot(from cells: inout RowCells) throws -> RecordSnapshot? {
        guard let name = try cells.optionalText() else { return nil }
        return RecordSnapshot(
            recordName: name, recordType: try cells.text(), changeSeq: try cells.int64(), deleted: try cells.next(), fieldsJSON: try cells.text(),
            created: ChangeStamp(timestamp: try cells.int64(), userRecordName: try cells.text(), deviceID: try cells.text()),
            modified: ChangeStamp(timestamp: try cells.int64(), userRecordName: try cells.text(), deviceID: try cells.text()))
    }

    /// The columns `snapshot(answeredFrom:)` decodes: a record's stored answer (migrations/0017) in place of its fields
    /// and stamps, for reads whose records only go into a response.
    static let answerColumns = "r.record_name, r.record_type, r.change_seq, r.deleted, r.answer"

    /// A record as its stored answer (`RecordSnapshot.storedAnswer`) at the cells' position, nil when the row has none
    /// there.
    static func snapshot(answeredFrom cells: inout RowCells) throws -> RecordSnapshot? {
        guard let name = try cells.optionalText() else { return nil }
        let unread = ChangeStamp(timestamp: 0, userRecordName: "", deviceID: "")
        return RecordSnapshot(
            recordName: name, recordType: try cells.text(), changeSeq: try cells.int64(), deleted: try cells.next(), fieldsJSON: "",
            created: unread, modified: unread, storedAnswer: try cells.text())
    }

    /// A row that is only the record columns.
    static func snapshot(_ row: PostgresRow) throws -> RecordSnapshot {
        var cells = RowCells(row)
        guard let snapshot = try Self.snapshot(from: &cells) else { throw RowCells.missing }
        return snapshot
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
        for try await row in try await connection.query(builder.query, logger: logger) {
            let record = try Self.record(from: Self.snapshot(row))
            records[record.recordName] = record
        }
        return records
    }
}

/// A row's cells read in order, each decoded as the type asked for. `row.decode((A, B, …).self)` instantiates generic
/// tuple metadata and copies the tuple for every row, which cost a page of records more than their bytes did.
struct RowCells {
    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) { self.cells = row.makeIterator() }

    mutating func next<Value: PostgresDecodable>(_: Value.Type = Value.self) throws -> Value {
        guard let cell = self.cells.next() else { throw Self.missing }
        return try cell.decode(Value.self, context: .default)
    }

    /// A text cell, read as its bytes: a page decodes seven a record, and the generic `decode` cost more than the
    /// bytes' copy.
    mutating func text() throws -> String {
        guard let text = try self.optionalText() else { throw Self.missing }
        return text
    }

    mutating func optionalText() throws -> String? {
        guard let cell = self.cells.next() else { throw Self.missing }
        guard cell.dataType == .text, cell.format == .binary else { return try cell.decode(String?.self, context: .default) }
        return cell.bytes.map { String(buffer: $0) }
    }

    mutating func int64() throws -> Int64 {
        guard let cell = self.cells.next() else { throw Self.missing }
        guard cell.dataType == .int8, cell.format == .binary, let bytes = cell.bytes, bytes.readableBytes == 8,
            let value = bytes.getInteger(at: bytes.readerIndex, as: Int64.self)
        else { return try cell.decode(Int64.self, context: .default) }
        return value
    }

    /// A statement answered fewer columns than its decoding reads: a mistake in this code, not in a request.
    static let missing = PostgresDecodingError.Code.missingData
}
