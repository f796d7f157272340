import CloudCore
import Foundation
import PostgresNIO

// The record write path's fixed-shape statements, prepared once per connection: PostgreSQL parses them once and,
// once it finds a generic plan as good, stops planning them (planning the upsert took 0.24 ms of a 2.5 ms save;
// bench/README.md, "The hot path"). Lists travel as arrays, so one text serves any number of records. Each names
// itself: PostgresNIO's default name is `String(reflecting:)` of the type, made again at every execution.

/// The first statement of an import's write (`RecordStore.beginWrite`): takes the database lock, finds the zone and
/// the schema version in one round trip.
struct BeginWrite: PostgresPreparedStatement {
    static var name: String { "BeginWrite" }
    static let sql = """
        SELECT d.change_seq,
            (SELECT id FROM zones WHERE database_id = d.id AND zone_name = $2 AND NOT deleted),
            (SELECT max(version) FROM schema_versions v WHERE v.container = d.container AND v.environment = d.environment),
            d.container, d.environment
        FROM databases d WHERE d.id = $1 FOR UPDATE OF d
        """
    typealias Row = (head: Int64, zoneID: Int64?, schemaVersion: Int32?, container: String, environment: String)

    var databaseID: Int64
    var zoneName: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(self.databaseID)
        bindings.append(self.zoneName)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((Int64, Int64?, Int32?, String, String).self) }
}

/// What a record write plans from (`RecordStore.read(for:)`), in one statement and so one snapshot: the database's
/// counter, the zone, the schema version, the key's stored answer and the batch's records. One row per record found;
/// a single row when none is (no row: no database).
struct ReadForWrite: PostgresPreparedStatement {
    static var name: String { "ReadForWrite" }
    static let sql = Self.statement(names: "r.record_name = ANY($4::text[])")

    /// The statement, with the condition on the records' names.
    static func statement(names: String) -> String {
        """
        SELECT d.change_seq, z.id,
            (SELECT max(version) FROM schema_versions v WHERE v.container = d.container AND v.environment = d.environment),
            d.container, d.environment,
            a.request_hash, a.status, a.answer, r.record_name, r.record_type, r.change_seq, r.deleted, r.fields::text,
            r.created_ms, r.created_by, r.created_device, r.modified_ms, r.modified_by, r.modified_device
        FROM databases d
        LEFT JOIN zones z ON z.database_id = d.id AND z.zone_name = $2 AND NOT z.deleted
        LEFT JOIN idempotent_writes a ON a.database_id = d.id AND a.key = $3
        LEFT JOIN records r ON r.zone_id = z.id AND \(names)
        WHERE d.id = $1
        """
    }
    typealias Row = (start: BeginWrite.Row, found: Found)
    typealias Found = (answer: (requestHash: Data, status: Int, body: Data)?, record: RecordStore.RecordColumns?)

    var databaseID: Int64
    var zoneName: String
    var key: String?
    var recordNames: [String]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(self.databaseID)
        bindings.append(self.zoneName)
        bindings.append(self.key)
        bindings.append(self.recordNames)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try Self.decode(row) }

    static func decode(_ row: PostgresRow) throws -> Row {
        let (
            head, zoneID, schemaVersion, container, environment, hash, status, answer, name, type, seq, deleted, fields, createdMs, createdBy,
            createdDevice, modifiedMs, modifiedBy, modifiedDevice
        ) =
            try row.decode(
                (
                    Int64, Int64?, Int32?, String, String, Data?, Int?, Data?, String?, String?, Int64?, Bool?, String?, Int64?, String?, String?,
                    Int64?, String?, String?
                ).self)
        var answerColumns: (requestHash: Data, status: Int, body: Data)?
        if let hash, let status, let answer { answerColumns = (hash, status, answer) }
        let start = (head, zoneID, schemaVersion, container, environment)
        guard let name, let type, let seq, let deleted, let fields, let createdMs, let createdBy, let createdDevice, let modifiedMs, let modifiedBy,
            let modifiedDevice
        else { return (start, (answerColumns, nil)) }
        return (
            start, (answerColumns, (name, type, seq, deleted, fields, createdMs, createdBy, createdDevice, modifiedMs, modifiedBy, modifiedDevice))
        )
    }
}

/// `ReadForWrite` of a batch of one record (most saves). PostgreSQL keeps one generic plan of a prepared statement, made
/// without the parameters' values: for `record_name = ANY($4)` it cannot know how many names come, and while the
/// table has no statistics yet (a new database) it reads the whole zone and filters; an equality on both columns of
/// the primary key always finds the one row by it.
struct ReadOneForWrite: PostgresPreparedStatement {
    static var name: String { "ReadOneForWrite" }
    static let sql = ReadForWrite.statement(names: "r.record_name = $4")

    var databaseID: Int64
    var zoneName: String
    var key: String?
    var recordName: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(self.databaseID)
        bindings.append(self.zoneName)
        bindings.append(self.key)
        bindings.append(self.recordName)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> ReadForWrite.Row { try ReadForWrite.decode(row) }
}

/// Stores a batch's new record versions in one statement, the procedure `store_record_writes` (migration 0012): creates
/// only over tombstones (a live name is left as it is and reported back), the other writes over anything; advances the
/// database's and the zone's change number. With `expectedHead`, it writes nothing unless the database's change number
/// is still that one (the optimistic write, RecordStore+Modify); nil: the caller holds the database lock. With `kept`,
/// the same statement stores an idempotent write's answer. With `commit` (a connection outside a transaction block),
/// the procedure commits what it wrote before it answers. Its one row: whether it wrote, and the creates it stored.
struct StoreWrites: PostgresPreparedStatement {
    static var name: String { "StoreWrites" }
    static let sql = "CALL store_record_writes(\((1...26).map { "$\($0)" }.joined(separator: ", ")), NULL, NULL)"
    typealias Row = (wrote: Bool, created: [String])

    var zoneID: Int64
    var databaseID: Int64
    var lastSeq: Int64
    var expectedHead: Int64?
    var stamp: ChangeStamp
    var creates: [Record]
    var others: [Record]
    var kept: KeptAnswer?
    var commit: Bool

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 26)
        bindings.append(self.zoneID)
        bindings.append(self.stamp.timestamp)
        bindings.append(self.stamp.userRecordName)
        bindings.append(self.stamp.deviceID)
        for rows in [self.creates, self.others] {
            bindings.append(rows.map(\.recordName))
            bindings.append(rows.map(\.recordType))
            bindings.append(rows.map(\.changeSeq))
            bindings.append(rows.map(\.deleted))
            bindings.append(rows.map(\.encodedFields))
            bindings.append(
                rows.map { record in
                    let targets = Reference.all(in: record.fields).filter { $0.action == .deleteSelf }
                    return targets.isEmpty ? "[]" : JSONWriter.encode(.array(targets.map { .string($0.recordName) }))
                })
            bindings.append(
                rows.map { record in
                    let checksums = RecordStore.assetChecksums(in: record.fields)
                    return checksums.isEmpty ? "[]" : JSONWriter.encode(.array(checksums.map(JSONValue.string)))
                })
        }
        bindings.append(self.lastSeq)
        bindings.append(self.databaseID)
        bindings.append(self.expectedHead)
        bindings.append(self.kept?.key)
        bindings.append(self.kept.map { ByteBuffer(bytes: $0.requestHash) })
        bindings.append(self.kept.map { Int64($0.answer.status) })
        bindings.append(self.kept.map { ByteBuffer(bytes: $0.answer.body) })
        bindings.append(self.commit)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode((Bool, [String]).self) }
}
