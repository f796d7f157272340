import CloudCore
import Foundation
import PostgresNIO

// The record paths' fixed-shape statements, prepared once per connection: PostgreSQL parses them once and,
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
    typealias Found = (answer: (requestHash: Data, status: Int, body: Data)?, record: RecordSnapshot?)

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
        var cells = RowCells(row)
        let start: BeginWrite.Row = (try cells.next(), try cells.next(), try cells.next(), try cells.next(), try cells.next())
        let (hash, status, answer) = (try cells.next(Data?.self), try cells.next(Int?.self), try cells.next(Data?.self))
        var answerColumns: (requestHash: Data, status: Int, body: Data)?
        if let hash, let status, let answer { answerColumns = (hash, status, answer) }
        return (start, (answerColumns, try RecordStore.snapshot(from: &cells)))
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
            bindings.append(rows.map(Self.cascadeTargets(of:)))
            bindings.append(
                rows.map { record in
                    let checksums = FieldValue.assetChecksums(in: record.fields)
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

    /// The names `record`'s DELETE_SELF references point at, as a JSON array ("[]" for none, the common case).
    static func cascadeTargets(of record: Record) -> String {
        let targets = Reference.all(in: record.fields).filter { $0.action == .deleteSelf }
        return targets.isEmpty ? "[]" : JSONWriter.encode(.array(targets.map { .string($0.recordName) }))
    }
}

/// The first statement of a group's write (`RecordStore.writeTogether`): takes the lock of every database the group
/// writes, in the order of their ids (so groups of several processes never wait for each other in a circle), with
/// each one's change number and schema version. No row for a database that is gone (an erased account). Each is found
/// by its primary key (`id = ANY(…)` in a generic plan may read the whole table).
struct LockDatabases: PostgresPreparedStatement {
    static var name: String { "LockDatabases" }
    static let sql = """
        SELECT d.id, d.change_seq,
            (SELECT max(version) FROM schema_versions v WHERE v.container = d.container AND v.environment = d.environment),
            d.container, d.environment
        FROM unnest($1::bigint[]) AS w(id) JOIN LATERAL (SELECT * FROM databases WHERE id = w.id LIMIT 1) d ON true
        ORDER BY d.id FOR UPDATE OF d
        """
    typealias Row = (databaseID: Int64, start: BeginWrite.Row)

    var databaseIDs: [Int64]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(self.databaseIDs)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (id, head, schemaVersion, container, environment) = try row.decode((Int64, Int64, Int32?, String, String).self)
        return (id, (head, nil, schemaVersion, container, environment))
    }
}

/// What a group of batches plans from, once the databases' locks are held: for each (database, zone, record name)
/// asked for, the zone's id and the stored record, if any. An empty name asks for the zone alone; a zone that does
/// not exist gives no row. `LIMIT 1` keeps each lookup a subquery of its own: pulled up into a plain join, a generic plan
/// made while `records` was small hashed a scan of the whole table (~13 ms a group once it had grown, until ANALYZE).
struct ReadGroup: PostgresPreparedStatement {
    static var name: String { "ReadGroup" }
    static let sql = """
        SELECT w.database_id, w.zone_name, z.id, r.record_name, r.record_type, r.change_seq, r.deleted, r.fields::text,
            r.created_ms, r.created_by, r.created_device, r.modified_ms, r.modified_by, r.modified_device
        FROM unnest($1::bigint[], $2::text[], $3::text[]) AS w(database_id, zone_name, record_name)
        JOIN LATERAL (SELECT id FROM zones WHERE database_id = w.database_id AND zone_name = w.zone_name AND NOT deleted LIMIT 1) z ON true
        LEFT JOIN LATERAL (SELECT * FROM records WHERE zone_id = z.id AND record_name = w.record_name LIMIT 1) r ON true
        """
    typealias Row = (databaseID: Int64, zoneName: String, zoneID: Int64, record: RecordSnapshot?)

    var asked: [(databaseID: Int64, zoneName: String, recordName: String)]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(self.asked.map(\.databaseID))
        bindings.append(self.asked.map(\.zoneName))
        bindings.append(self.asked.map(\.recordName))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var cells = RowCells(row)
        return (try cells.next(), try cells.next(), try cells.next(), try RecordStore.snapshot(from: &cells))
    }
}

/// Stores what a group of batches wrote under the databases' locks, in one statement: every record version (each with
/// its own creation and modification stamps, as planned on what the locks let it read), the answers kept for
/// idempotent writes, and the databases' and zones' change numbers. Nothing here decides: the plans did.
struct StoreGroup: PostgresPreparedStatement {
    static var name: String { "StoreGroup" }
    static let sql = """
        WITH advanced AS (
            UPDATE databases d SET change_seq = s.seq
            FROM unnest($1::bigint[], $2::bigint[]) AS s(id, seq) WHERE d.id = s.id),
        zoned AS (
            UPDATE zones z SET change_seq = s.seq, modified_ms = s.ms
            FROM unnest($3::bigint[], $4::bigint[], $5::bigint[]) AS s(id, seq, ms) WHERE z.id = s.id),
        kept AS (
            INSERT INTO idempotent_writes (database_id, key, request_hash, status, answer, created_ms)
            SELECT * FROM unnest($6::bigint[], $7::text[], $8::bytea[], $9::integer[], $10::bytea[], $11::bigint[])),
        stored AS (
            INSERT INTO records (zone_id, record_name, record_type, change_seq, deleted, fields, cascade_refs,
                created_ms, created_by, created_device, modified_ms, modified_by, modified_device)
            SELECT u.zone, u.name, u.type, u.seq, u.deleted, u.fields::jsonb,
                CASE WHEN u.refs = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.refs::jsonb)) END,
                u.created_ms, u.created_by, u.created_device, u.modified_ms, u.modified_by, u.modified_device
            FROM unnest($12::bigint[], $13::text[], $14::text[], $15::bigint[], $16::boolean[], $17::text[], $18::text[],
                $19::bigint[], $20::text[], $21::text[], $22::bigint[], $23::text[], $24::text[])
                AS u(zone, name, type, seq, deleted, fields, refs, created_ms, created_by, created_device, modified_ms, modified_by, modified_device)
            ON CONFLICT (zone_id, record_name) DO UPDATE SET
                record_type = EXCLUDED.record_type, change_seq = EXCLUDED.change_seq, deleted = EXCLUDED.deleted,
                fields = EXCLUDED.fields, cascade_refs = EXCLUDED.cascade_refs, asset_refs = EXCLUDED.asset_refs,
                created_ms = EXCLUDED.created_ms, created_by = EXCLUDED.created_by, created_device = EXCLUDED.created_device,
                modified_ms = EXCLUDED.modified_ms, modified_by = EXCLUDED.modified_by, modified_device = EXCLUDED.modified_device)
        SELECT 1
        """

    var heads: [(databaseID: Int64, seq: Int64)]
    var zoneHeads: [(zoneID: Int64, seq: Int64, modifiedMs: Int64)]
    var kept: [(databaseID: Int64, answer: KeptAnswer, at: Int64)]
    var writes: [(zoneID: Int64, record: Record)]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 24)
        bindings.append(self.heads.map(\.databaseID))
        bindings.append(self.heads.map(\.seq))
        bindings.append(self.zoneHeads.map(\.zoneID))
        bindings.append(self.zoneHeads.map(\.seq))
        bindings.append(self.zoneHeads.map(\.modifiedMs))
        bindings.append(self.kept.map(\.databaseID))
        bindings.append(self.kept.map(\.answer.key))
        bindings.append(self.kept.map { ByteBuffer(bytes: $0.answer.requestHash) })
        bindings.append(self.kept.map { Int32($0.answer.answer.status) })
        bindings.append(self.kept.map { ByteBuffer(bytes: $0.answer.answer.body) })
        bindings.append(self.kept.map(\.at))
        let records = self.writes.map(\.record)
        bindings.append(self.writes.map(\.zoneID))
        bindings.append(records.map(\.recordName))
        bindings.append(records.map(\.recordType))
        bindings.append(records.map(\.changeSeq))
        bindings.append(records.map(\.deleted))
        bindings.append(records.map(\.encodedFields))
        bindings.append(records.map(StoreWrites.cascadeTargets(of:)))
        bindings.append(records.map(\.created.timestamp))
        bindings.append(records.map(\.created.userRecordName))
        bindings.append(records.map(\.created.deviceID))
        bindings.append(records.map(\.modified.timestamp))
        bindings.append(records.map(\.modified.userRecordName))
        bindings.append(records.map(\.modified.deviceID))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Int32 { try row.decode(Int32.self) }
}

/// A live record by its name (both columns of the primary key, so the generic plan finds it by the key), with its
/// fields limited to the desired keys (all when NULL), and its zone by name in the same statement: no row when the
/// zone does not exist, a row of NULLs when the record does not.
struct LookupOne: PostgresPreparedStatement {
    static var name: String { "LookupOne" }
    static let sql = """
        SELECT r.record_name, r.record_type, r.change_seq, r.deleted,
            CASE WHEN $4::text[] IS NULL THEN r.fields::text ELSE \(RecordStore.fields(limitedTo: "$4")) END,
            r.created_ms, r.created_by, r.created_device, r.modified_ms, r.modified_by, r.modified_device
        FROM zones z LEFT JOIN records r ON r.zone_id = z.id AND r.record_name = $3 AND NOT r.deleted
        WHERE z.database_id = $1 AND z.zone_name = $2 AND NOT z.deleted
        """

    var databaseID: Int64
    var zoneName: String
    var recordName: String
    var desiredKeys: [String]?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(self.databaseID)
        bindings.append(self.zoneName)
        bindings.append(self.recordName)
        bindings.append(self.desiredKeys)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> RecordSnapshot? {
        var cells = RowCells(row)
        return try RecordStore.snapshot(from: &cells)
    }
}
