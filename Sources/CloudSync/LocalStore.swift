import CloudCore
import Foundation
import GRDB

/// A record as the device sees it: the server's version it builds on (`changeTag`, nil when the server has
/// never had it) with the device's own edits applied.
public struct LocalRecord: Sendable, Equatable {
    public var scope: DatabaseScope
    public var zone: String
    public var recordName: String
    public var recordType: String
    public var changeTag: String?
    public var fields: [String: FieldValue]

    public init(
        scope: DatabaseScope, zone: String = defaultZoneName, recordName: String, recordType: String, changeTag: String? = nil,
        fields: [String: FieldValue]
    ) {
        self.scope = scope
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
        self.changeTag = changeTag
        self.fields = fields
    }

    /// The record name a REFERENCE field points at.
    public func reference(_ field: String) -> String? { self.fields[field]?.value["recordName"]?.stringValue }
}

/// Fields of a private record the device shows on the public record it references: the user's nickname and
/// favourite flag for a canonical venue, say. The fields are user-owned on the public record, so canonical deltas
/// merged with `FieldMerge` never overwrite them.
public struct FieldProjection: Sendable, Equatable {
    public var sourceType: String
    public var reference: String
    public var fields: [String]

    public init(sourceType: String, reference: String, fields: [String]) {
        self.sourceType = sourceType
        self.reference = reference
        self.fields = fields
    }
}

/// The device's SQLite database (GRDB): canonical and private records, change tokens, the queue of edits not yet
/// on the server, the batch in flight and unfinished uploads. Every change a sync applies is written in the same
/// transaction as the token that covers it, so a crash never leaves a token ahead of the data.
public final class LocalStore: Sendable, WebAuthTokenKeeper {
    let database: DatabasePool
    let projections: [FieldProjection]
    /// Owners of public-record fields for the merge; projected fields are added as `.user`.
    let publicOwners: [String: FieldOwner]

    public init(path: String, projections: [FieldProjection] = [], publicOwners: [String: FieldOwner] = [:]) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // A pool is WAL with `synchronous = NORMAL` (GRDB's choice): reads never wait for a sync's write, and what
        // the sync loop writes (pages, tokens, answers), which the server can give again, is not forced to disk
        // commit by commit. The person's own edits are (`writeDurably`). An app crash loses nothing either way; a
        // power cut can lose the last sync writes, which the next sync fetches again (docs/CLIENT.md).
        self.database = try DatabasePool(path: path, configuration: configuration)
        self.projections = projections
        var owners = publicOwners
        for projection in projections { for field in projection.fields { owners[field] = .user } }
        self.publicOwners = owners
        try Self.migrator.migrate(self.database)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE records (
                        scope TEXT NOT NULL, zone TEXT NOT NULL, recordName TEXT NOT NULL, recordType TEXT NOT NULL,
                        changeTag TEXT,
                        fields TEXT NOT NULL,
                        deleted INTEGER NOT NULL DEFAULT 0,
                        stale INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (scope, zone, recordName));
                    CREATE INDEX records_by_type ON records (scope, recordType);
                    CREATE TABLE pending (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        zone TEXT NOT NULL, recordName TEXT NOT NULL,
                        kind TEXT NOT NULL CHECK (kind IN ('save', 'delete')),
                        changedFields TEXT NOT NULL DEFAULT '[]',
                        lastError TEXT,
                        UNIQUE (zone, recordName));
                    CREATE TABLE outbox (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        zone TEXT NOT NULL, idempotencyKey TEXT NOT NULL, body BLOB NOT NULL, entries TEXT NOT NULL);
                    CREATE TABLE tokens (scope TEXT NOT NULL, zone TEXT NOT NULL, token TEXT NOT NULL, PRIMARY KEY (scope, zone));
                    CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE uploads (
                        recordName TEXT NOT NULL, fieldName TEXT NOT NULL, checksum TEXT NOT NULL, size INTEGER NOT NULL,
                        url TEXT NOT NULL, createdAt INTEGER NOT NULL,
                        PRIMARY KEY (recordName, fieldName));
                    """)
        }
        return migrator
    }

    // MARK: settings

    public func setting(_ key: String) throws -> String? {
        try self.database.read { db in try db.value(String.self, "SELECT value FROM settings WHERE key = ?", [key]) }
    }

    public func setSetting(_ key: String, _ value: String?) throws {
        try self.database.write { db in
            if let value {
                try db.run("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value])
            } else {
                try db.run("DELETE FROM settings WHERE key = ?", [key])
            }
        }
    }

    public func webAuthToken() throws -> String? { try self.setting("webAuthToken") }
    public func setWebAuthToken(_ token: String?) throws { try self.setSetting("webAuthToken", token) }

    /// This device's id, made on first use; the server answers it as `deviceID` in `created`/`modified`.
    public func deviceID() throws -> String {
        if let id = try self.setting("deviceID") { return id }
        let id = UUID().uuidString.lowercased()
        try self.setSetting("deviceID", id)
        return id
    }

    // MARK: reading

    public func record(_ recordName: String, scope: DatabaseScope, zone: String = defaultZoneName) throws -> LocalRecord? {
        try self.database.read { db in try Self.fetchRecord(db, scope: scope, zone: zone, name: recordName) }
    }

    /// Live records of a type, by record name.
    public func records(ofType recordType: String, scope: DatabaseScope) throws -> [LocalRecord] {
        try self.database.read { db in
            try db.rows(
                "SELECT * FROM records WHERE scope = ? AND recordType = ? AND deleted = 0 ORDER BY recordName",
                [scope.rawValue, recordType]
            ).map(Self.record(from:))
        }
    }

    /// Live records of a type whose REFERENCE field `field` points at `recordName`.
    public func records(ofType recordType: String, scope: DatabaseScope, referencing recordName: String, in field: String) throws -> [LocalRecord] {
        try self.records(ofType: recordType, scope: scope, whereJSON: "$.\(field).value.recordName", equals: recordName)
    }

    /// Live records of a type whose STRING field `field` equals `value`, by record name.
    public func records(ofType recordType: String, scope: DatabaseScope, where field: String, equals value: String) throws -> [LocalRecord] {
        try self.records(ofType: recordType, scope: scope, whereJSON: "$.\(field).value", equals: value)
    }

    /// Live records of a type whose fields JSON has `value` at `path` (SQLite's `json_extract`), by record name.
    func records(ofType recordType: String, scope: DatabaseScope, whereJSON path: String, equals value: String) throws -> [LocalRecord] {
        try self.database.read { db in
            try db.rows(
                "SELECT * FROM records WHERE scope = ? AND recordType = ? AND deleted = 0 AND json_extract(fields, ?) = ? ORDER BY recordName",
                [scope.rawValue, recordType, path, value]
            ).map(Self.record(from:))
        }
    }

    public func hasRecords(ofType recordType: String, scope: DatabaseScope) throws -> Bool {
        try self.database.read { db in
            try db.value(
                Bool.self, "SELECT EXISTS (SELECT 1 FROM records WHERE scope = ? AND recordType = ? AND deleted = 0)", [scope.rawValue, recordType])
                ?? false
        }
    }

    /// How many edits wait for the server, and how many of them the server refused (with `lastError`).
    public func pendingCounts() throws -> (waiting: Int, refused: Int) {
        try self.database.read { db in
            let waiting = try db.value(Int.self, "SELECT count(*) FROM pending WHERE lastError IS NULL") ?? 0
            let refused = try db.value(Int.self, "SELECT count(*) FROM pending WHERE lastError IS NOT NULL") ?? 0
            return (waiting, refused)
        }
    }

    /// Edits the server refused, with its reasons.
    public func refusedEdits() throws -> [(recordName: String, error: String)] {
        try self.database.read { db in
            try db.rows("SELECT recordName, lastError FROM pending WHERE lastError IS NOT NULL ORDER BY seq").map {
                ($0["recordName"], $0["lastError"])
            }
        }
    }

    // MARK: local edits (private database)

    /// Sets (or, with nil, removes) fields of a private record, creating it when new, and queues the change.
    @discardableResult
    public func save(_ recordName: String, type recordType: String, zone: String = defaultZoneName, fields: [String: FieldValue?]) throws
        -> LocalRecord
    {
        try self.writeDurably { db in
            let old = try Self.fetchRecord(db, scope: .private, zone: zone, name: recordName)
            if let old, old.recordType != recordType {
                throw SyncError(
                    code: ServerErrorCode.badRequest.rawValue, reason: "\(recordName) is a \(old.recordType), not a \(recordType)", status: 0)
            }
            var record = old ?? LocalRecord(scope: .private, zone: zone, recordName: recordName, recordType: recordType, fields: [:])
            for (name, value) in fields { record.fields[name] = value }
            try Self.write(db, record)
            let pending = try db.row("SELECT kind, changedFields FROM pending WHERE zone = ? AND recordName = ?", [zone, recordName])
            var changed = Set(pending.flatMap { Self.names($0["changedFields"]) } ?? [])
            changed.formUnion(fields.keys)
            if record.changeTag == nil { changed.formUnion(record.fields.keys) }
            try Self.queueEdit(db, zone: zone, name: recordName, kind: "save", changed: changed)
            try self.project(db, old: old, new: record)
            return record
        }
    }

    /// Deletes a private record locally and queues the delete.
    public func delete(_ recordName: String, zone: String = defaultZoneName) throws {
        try self.writeDurably { db in
            guard let old = try Self.fetchRecord(db, scope: .private, zone: zone, name: recordName) else { return }
            try db.run("UPDATE records SET deleted = 1 WHERE scope = 'private' AND zone = ? AND recordName = ?", [zone, recordName])
            try Self.queueEdit(db, zone: zone, name: recordName, kind: "delete", changed: [])
            try self.project(db, old: old, new: nil)
        }
    }

    /// Replaces the record's queued edit with a new one at the end of the queue (a new `seq`, so a batch in
    /// flight can tell that the record changed again after it was sent).
    static func queueEdit(_ db: Database, zone: String, name: String, kind: String, changed: Set<String>) throws {
        try db.run("DELETE FROM pending WHERE zone = ? AND recordName = ?", [zone, name])
        try db.run(
            "INSERT INTO pending (zone, recordName, kind, changedFields) VALUES (?, ?, ?, ?)",
            [zone, name, kind, JSONWriter.encode(.array(changed.sorted().map(JSONValue.string)))])
    }

    /// A write forced to disk before it returns: the person's edits exist nowhere else yet.
    func writeDurably<T>(_ body: (Database) throws -> T) throws -> T {
        try self.database.writeWithoutTransaction { db in
            try db.run("PRAGMA synchronous = FULL")
            defer { try? db.run("PRAGMA synchronous = NORMAL") }
            var result: T?
            try db.inTransaction {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    // MARK: rows

    static func fetchRecord(_ db: Database, scope: DatabaseScope, zone: String, name: String, includingDeleted: Bool = false) throws -> LocalRecord? {
        try db.row(
            "SELECT * FROM records WHERE scope = ? AND zone = ? AND recordName = ?" + (includingDeleted ? "" : " AND deleted = 0"),
            [scope.rawValue, zone, name]
        ).map(Self.record(from:))
    }

    static func record(from row: Row) -> LocalRecord {
        LocalRecord(
            scope: DatabaseScope(rawValue: row["scope"]) ?? .private, zone: row["zone"], recordName: row["recordName"],
            recordType: row["recordType"], changeTag: row["changeTag"], fields: Self.fields(row["fields"]))
    }

    static func write(_ db: Database, _ record: LocalRecord, deleted: Bool = false) throws {
        try db.run(
            """
            INSERT INTO records (scope, zone, recordName, recordType, changeTag, fields, deleted, stale) VALUES (?, ?, ?, ?, ?, ?, ?, 0)
            ON CONFLICT (scope, zone, recordName) DO UPDATE SET recordType = excluded.recordType, changeTag = excluded.changeTag,
                fields = excluded.fields, deleted = excluded.deleted, stale = 0
            """,
            [record.scope.rawValue, record.zone, record.recordName, record.recordType, record.changeTag, Record.encode(record.fields), deleted])
    }

    static func fields(_ text: String) -> [String: FieldValue] {
        guard let object = try? JSONValue.parse(Array(text.utf8)).objectValue else { return [:] }
        return object.compactMapValues(FieldValue.init(stored:))
    }

    static func names(_ text: String?) -> [String] {
        (text.flatMap { try? JSONValue.parse(Array($0.utf8)).arrayValue } ?? []).compactMap(\.stringValue)
    }

    // MARK: projections

    /// Moves projected fields from the public record `old` referenced to the one `new` references.
    func project(_ db: Database, old: LocalRecord?, new: LocalRecord?) throws {
        for projection in self.projections {
            let oldTarget = old?.recordType == projection.sourceType ? old?.reference(projection.reference) : nil
            let newTarget = new?.recordType == projection.sourceType ? new?.reference(projection.reference) : nil
            if let oldTarget, oldTarget != newTarget {
                try Self.setPublicFields(db, of: oldTarget, projection.fields.map { ($0, nil) })
            }
            if let new, let newTarget {
                try Self.setPublicFields(db, of: newTarget, projection.fields.map { ($0, new.fields[$0]) })
            }
        }
    }

    /// Projects every source record again: after public records arrived that sources may point at.
    func reprojectAll(_ db: Database) throws {
        for projection in self.projections {
            let sources = try db.rows("SELECT * FROM records WHERE scope = 'private' AND recordType = ? AND deleted = 0", [projection.sourceType])
            for source in sources.map(Self.record(from:)) {
                if let target = source.reference(projection.reference) {
                    try Self.setPublicFields(db, of: target, projection.fields.map { ($0, source.fields[$0]) })
                }
            }
        }
    }

    static func setPublicFields(_ db: Database, of recordName: String, _ values: [(String, FieldValue?)]) throws {
        guard var target = try Self.fetchRecord(db, scope: .public, zone: defaultZoneName, name: recordName) else { return }
        let before = target.fields
        for (name, value) in values { target.fields[name] = value }
        if target.fields != before {
            try db.run(
                "UPDATE records SET fields = ? WHERE scope = 'public' AND zone = ? AND recordName = ?",
                [Record.encode(target.fields), defaultZoneName, recordName])
        }
    }
}

extension Database {
    // The sync loop runs the same few statements for every record it applies; compiling them each time (with GRDB's
    // statement authorizer) cost more than running them, so each is compiled once per connection and reused.

    func run(_ sql: String, _ arguments: StatementArguments = StatementArguments()) throws {
        try self.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    func row(_ sql: String, _ arguments: StatementArguments = StatementArguments()) throws -> Row? {
        try Row.fetchOne(self.cachedStatement(sql: sql), arguments: arguments)
    }

    func rows(_ sql: String, _ arguments: StatementArguments = StatementArguments()) throws -> [Row] {
        try Row.fetchAll(self.cachedStatement(sql: sql), arguments: arguments)
    }

    func value<Value: DatabaseValueConvertible & StatementColumnConvertible>(
        _ type: Value.Type, _ sql: String, _ arguments: StatementArguments = StatementArguments()
    ) throws -> Value? {
        try Value.fetchOne(self.cachedStatement(sql: sql), arguments: arguments)
    }

    func values<Value: DatabaseValueConvertible & StatementColumnConvertible>(
        _ type: Value.Type, _ sql: String, _ arguments: StatementArguments = StatementArguments()
    ) throws -> [Value] {
        try Value.fetchAll(self.cachedStatement(sql: sql), arguments: arguments)
    }
}
