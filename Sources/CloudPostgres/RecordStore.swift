import CloudCore
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// A resolved CloudKit database: one container × environment × scope (× owner account for private).
public struct DatabaseRef: Sendable, Hashable {
    public var id: Int64
    public var scope: DatabaseScope
    /// The zones' `ownerRecordName`: the account's user record name, `_defaultOwner` for the public database.
    public var ownerRecordName: String
}

/// Limits that apply to writes.
public struct RecordLimits: Sendable {
    public var maxOperations = 200
    public var maxRecordBytes = 1_000_000
    public var maxResultsLimit = 200
    public init() {}
}

/// The result of `records/modify`.
public struct ModifyResult: Sendable {
    public var outcomes: [OperationOutcome]
    /// True when the batch was atomic and failed: nothing was written.
    public var atomicFailed: Bool
    /// With an idempotency key: the answer to send, stored with the write (or, for a retry, the first answer;
    /// then `outcomes` is empty).
    public var answer: StoredAnswer? = nil
}

/// A write's HTTP answer as it is kept for retries.
public struct StoredAnswer: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// A client's `Idempotency-Key` for one write: the first answer is stored in the write's transaction, and a
/// retry with the same key gets it back instead of writing again.
public struct IdempotentWrite: Sendable {
    public var key: String
    /// SHA-256 of the request, so a key reused for a different request is refused rather than misanswered.
    public var requestHash: Data
    /// Makes the answer from the result, inside the transaction.
    public var answer: @Sendable (ModifyResult) throws -> StoredAnswer

    public init(key: String, requestHash: Data, answer: @escaping @Sendable (ModifyResult) throws -> StoredAnswer) {
        self.key = key
        self.requestHash = requestHash
        self.answer = answer
    }
}

/// Owns every line of SQL about databases, zones and records. Each write is one transaction that first locks
/// the database's row, so change sequence numbers are assigned and committed in a single order (docs/SYNC.md).
public final class RecordStore: Sendable {
    let client: PostgresClient
    public let signer: TokenSigner
    public let limits: RecordLimits
    private let databaseIDs = Mutex<[DatabaseKey: Int64]>([:])
    /// The deployed schema by version, so a write re-reads only its version number.
    let schemaCache = Mutex<(version: Int32, schema: Schema)?>(nil)

    struct DatabaseKey: Hashable {
        var container: String
        var environment: String
        var scope: DatabaseScope
        var ownerAccountID: Int64?
    }

    public init(client: PostgresClient, signer: TokenSigner, limits: RecordLimits = RecordLimits()) {
        self.client = client
        self.signer = signer
        self.limits = limits
    }

    /// The columns `snapshot(from:)` decodes, with the fields expression limited to `desiredKeys`.
    static func recordColumns(_ builder: inout SQLBuilder, desiredKeys: [String]?) -> String {
        let fields: String
        if let desiredKeys {
            let keys = builder.bind(desiredKeys)
            fields = "(SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(r.fields) WHERE key = ANY(\(keys)::text[]))::text"
        } else {
            fields = "r.fields::text"
        }
        return ["record_name", "record_type", "change_seq", "deleted"].map { "r.\($0)" }.joined(separator: ", ")
            + ", \(fields), "
            + ["created_ms", "created_by", "created_device", "modified_ms", "modified_by", "modified_device"].map { "r.\($0)" }.joined(separator: ", ")
    }

    typealias RecordColumns = (String, String, Int64, Bool, String, Int64, String, String, Int64, String, String)

    static func snapshot(_ c: RecordColumns) -> RecordSnapshot {
        RecordSnapshot(
            recordName: c.0, recordType: c.1, changeSeq: c.2, deleted: c.3, fieldsJSON: c.4,
            created: ChangeStamp(timestamp: c.5, userRecordName: c.6, deviceID: c.7),
            modified: ChangeStamp(timestamp: c.8, userRecordName: c.9, deviceID: c.10))
    }

    // MARK: Databases and zones

    /// Finds or creates the database (and its default zone) for a container, environment, scope and owner.
    public func database(
        container: String, environment: String, scope: DatabaseScope, owner: Account?, logger: Logger
    ) async throws -> DatabaseRef {
        let key = DatabaseKey(container: container, environment: environment, scope: scope, ownerAccountID: owner?.id)
        let ownerName = owner?.userRecordName ?? "_defaultOwner"
        if let id = self.databaseIDs.withLock({ $0[key] }) {
            return DatabaseRef(id: id, scope: scope, ownerRecordName: ownerName)
        }
        let id = try await self.client.transaction(logger: logger) { connection -> Int64 in
            let inserted = try await connection.query(
                """
                INSERT INTO databases (container, environment, scope, owner_account_id)
                VALUES (\(container), \(environment), \(scope.rawValue), \(owner?.id))
                ON CONFLICT (container, environment, scope, owner_account_id) DO NOTHING RETURNING id
                """, logger: logger)
            for try await id in inserted.decode(Int64.self) {
                try await connection.query(
                    "INSERT INTO zones (database_id, zone_name, change_seq, modified_ms) VALUES (\(id), \(defaultZoneName), 0, \(Timestamp.now))",
                    logger: logger)
                return id
            }
            let existing = try await connection.query(
                """
                SELECT id FROM databases WHERE container = \(container) AND environment = \(environment)
                AND scope = \(scope.rawValue) AND owner_account_id IS NOT DISTINCT FROM \(owner?.id)
                """, logger: logger)
            for try await id in existing.decode(Int64.self) { return id }
            throw CloudError(.internalError, "database row vanished")
        }
        self.databaseIDs.withLock { $0[key] = id }
        return DatabaseRef(id: id, scope: scope, ownerRecordName: ownerName)
    }

    /// The live zone's internal id, or ZONE_NOT_FOUND.
    func zoneID(named name: String, in database: DatabaseRef, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        let rows = try await connection.query(
            "SELECT id FROM zones WHERE database_id = \(database.id) AND zone_name = \(name) AND NOT deleted", logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw CloudError(.zoneNotFound, "zone \(name) does not exist")
    }


    // MARK: records/modify

    /// Applies a batch of operations in one transaction. `atomic` (custom zones only) makes it all or nothing.
    /// With `idempotency`, a batch whose key was seen before is not applied again: its stored answer returns.
    public func modify(
        _ operations: [RecordOperation], zoneName: String, atomic requestedAtomic: Bool?, in database: DatabaseRef,
        stamp: ChangeStamp, idempotency: IdempotentWrite? = nil, logger: Logger
    ) async throws -> ModifyResult {
        guard operations.count <= self.limits.maxOperations else {
            throw CloudError.badRequest("a request may hold at most \(self.limits.maxOperations) operations; this one has \(operations.count): split it")
        }
        let atomic = zoneName != defaultZoneName && (requestedAtomic ?? true)
        let limits = self.limits
        do {
            return try await self.client.transaction(logger: logger) { connection in
                let (head, zoneID, schema) = try await self.beginWrite(zoneName: zoneName, in: database, on: connection, logger: logger)
                // Checked under the database lock: a retry racing its original waits for it, then finds its answer.
                if let idempotency, let stored = try await Self.storedAnswer(idempotency, databaseID: database.id, on: connection, logger: logger) {
                    return ModifyResult(outcomes: [], atomicFailed: false, answer: stored)
                }
                func finish(_ result: ModifyResult) async throws -> ModifyResult {
                    guard let idempotency else { return result }
                    var result = result
                    let answer = try idempotency.answer(result)
                    try await connection.query(
                        """
                        INSERT INTO idempotent_writes (database_id, key, request_hash, status, answer, created_ms)
                        VALUES (\(database.id), \(idempotency.key), \(idempotency.requestHash), \(answer.status), \(Data(answer.body)), \(Timestamp.now))
                        """, logger: logger)
                    result.answer = answer
                    return result
                }
                // A create needs no lookup: the upsert refuses a create whose name is live, and only those are loaded.
                let lookedUp = operations.filter { $0.type != .create }.map(\.recordName)
                let existing = lookedUp.isEmpty ? [:] : try await Self.loadRecords(lookedUp, zoneID: zoneID, on: connection, logger: logger)
                var plan = try ModificationPlan(
                    operations: operations, existing: existing, firstSeq: head + 1, stamp: stamp,
                    maxRecordBytes: limits.maxRecordBytes, schema: schema, scope: database.scope)
                try await Self.checkValidatedReferences(&plan, existing: existing, zoneID: zoneID, on: connection, logger: logger)
                if atomic, plan.outcomes.contains(where: \.isFailure) {
                    return try await finish(ModifyResult(outcomes: Self.atomicFailure(plan.outcomes), atomicFailed: true))
                }
                var writes = plan.writes
                var lastSeq = plan.lastSeq
                try await Self.cascadeDeletes(&writes, lastSeq: &lastSeq, zoneID: zoneID, stamp: stamp, on: connection, logger: logger)
                guard !writes.isEmpty else { return try await finish(ModifyResult(outcomes: plan.outcomes, atomicFailed: false)) }
                try await Self.checkAssetsExist(writes, databaseID: database.id, on: connection, logger: logger)
                let creates = Set(operations.filter { $0.type == .create }.map(\.recordName))
                let taken = try await Self.store(writes, creates: creates, zoneID: zoneID, databaseID: database.id, lastSeq: lastSeq, on: connection, logger: logger)
                guard !taken.isEmpty else { return try await finish(ModifyResult(outcomes: plan.outcomes, atomicFailed: false)) }
                let current = try await Self.loadRecords(Array(taken), zoneID: zoneID, on: connection, logger: logger)
                let outcomes = plan.outcomes.map { outcome -> OperationOutcome in
                    guard case .saved(let record) = outcome, taken.contains(record.recordName) else { return outcome }
                    return .failed(recordName: record.recordName, error: CloudError(.exists, "record to insert already exists"), serverRecord: current[record.recordName])
                }
                // An atomic batch with a taken name must leave nothing behind: throwing rolls the transaction back.
                if atomic { throw AtomicBatchFailed(outcomes: Self.atomicFailure(outcomes)) }
                return try await finish(ModifyResult(outcomes: outcomes, atomicFailed: false))
            }
        } catch let failure as AtomicBatchFailed {
            // Rolled back, so nothing is stored: a retry runs again (and, names still taken, fails the same way).
            let result = ModifyResult(outcomes: failure.outcomes, atomicFailed: true)
            return ModifyResult(outcomes: failure.outcomes, atomicFailed: true, answer: try idempotency?.answer(result))
        }
    }

    /// The stored answer for `write`'s key, or nil; a key reused for another request is BAD_REQUEST.
    static func storedAnswer(_ write: IdempotentWrite, databaseID: Int64, on connection: PostgresConnection, logger: Logger) async throws -> StoredAnswer? {
        let rows = try await connection.query(
            "SELECT request_hash, status, answer FROM idempotent_writes WHERE database_id = \(databaseID) AND key = \(write.key)", logger: logger)
        for try await (hash, status, answer) in rows.decode((Data, Int, Data).self) {
            guard hash == write.requestHash else {
                throw CloudError.badRequest("Idempotency-Key \(write.key) was already used for a different request; use a new key for a new request")
            }
            return StoredAnswer(status: status, body: Array(answer))
        }
        return nil
    }

    /// Forgets stored answers older than `olderThanMs` (retries are expected within minutes, kept for a day).
    public func purgeIdempotentWrites(olderThanMs cutoff: Int64, logger: Logger) async throws {
        _ = try await translatingDatabaseErrors {
            try await self.client.query("DELETE FROM idempotent_writes WHERE created_ms < \(cutoff)", logger: logger)
        }
    }

    /// A failed atomic batch: every operation that would have succeeded reports ATOMIC_ERROR instead.
    static func atomicFailure(_ outcomes: [OperationOutcome]) -> [OperationOutcome] {
        outcomes.map { outcome in
            switch outcome {
            case .failed: outcome
            case .saved(let record): .failed(recordName: record.recordName, error: .atomicFailure, serverRecord: nil)
            case .deleted(let name, _): .failed(recordName: name, error: .atomicFailure, serverRecord: nil)
            }
        }
    }

    struct AtomicBatchFailed: Error {
        var outcomes: [OperationOutcome]
    }

    /// Takes the row lock that orders every write of a database (docs/SYNC.md) and returns its last change number.
    /// Held until the transaction ends, so writers of one database commit in change-number order.
    static func lockChangeSequence(of database: DatabaseRef, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        for try await seq in try await connection.query(
            "SELECT change_seq FROM databases WHERE id = \(database.id) FOR UPDATE", logger: logger
        ).decode(Int64.self) { return seq }
        throw CloudError(.internalError, "database \(database.id) vanished")
    }

    /// The first statement of a record write: takes the database lock, finds the zone and the schema version
    /// in one round trip. Returns the last change number, the zone's id and the schema in force.
    func beginWrite(zoneName: String, in database: DatabaseRef, on connection: PostgresConnection, logger: Logger) async throws -> (Int64, Int64, Schema?) {
        let rows = try await connection.query(
            """
            SELECT d.change_seq,
                (SELECT id FROM zones WHERE database_id = d.id AND zone_name = \(zoneName) AND NOT deleted),
                (SELECT max(version) FROM schema_versions)
            FROM databases d WHERE d.id = \(database.id) FOR UPDATE OF d
            """, logger: logger)
        for try await (head, zoneID, schemaVersion) in rows.decode((Int64, Int64?, Int32?).self) {
            guard let zoneID else { throw CloudError(.zoneNotFound, "zone \(zoneName) does not exist") }
            guard let schemaVersion else { return (head, zoneID, nil) }
            return (head, zoneID, try await self.schema(version: schemaVersion, on: connection, logger: logger))
        }
        throw CloudError(.internalError, "database \(database.id) vanished")
    }

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
        builder.append("SELECT \(columns) FROM records r WHERE r.zone_id = \(builder.bind(zoneID)) AND r.record_name = ANY(\(builder.bind(names)))")
        var records: [String: Record] = [:]
        for try await columns in try await connection.query(builder.query, logger: logger).decode(RecordColumns.self) {
            let record = try Self.record(from: Self.snapshot(columns))
            records[record.recordName] = record
        }
        return records
    }

    /// Fails saves whose VALIDATE references point at a record that will not exist after the batch.
    static func checkValidatedReferences(
        _ plan: inout ModificationPlan, existing: [String: Record], zoneID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let saved = plan.writes.filter { !$0.deleted }
        let targets = Set(saved.flatMap { Reference.all(in: $0.fields).filter { $0.action == .validate }.map(\.recordName) })
        guard !targets.isEmpty else { return }
        let batchLive = Set(saved.map(\.recordName))
        let batchDeleted = Set(plan.writes.filter(\.deleted).map(\.recordName))
        var live = Set<String>()
        let outside = Array(targets.subtracting(batchLive).subtracting(batchDeleted))
        if !outside.isEmpty {
            for try await name in try await connection.query(
                "SELECT record_name FROM records WHERE zone_id = \(zoneID) AND NOT deleted AND record_name = ANY(\(outside))",
                logger: logger
            ).decode(String.self) { live.insert(name) }
        }
        live.formUnion(batchLive)
        var failed = Set<String>()
        for record in saved {
            if let missing = Reference.all(in: record.fields).first(where: { $0.action == .validate && !live.contains($0.recordName) }) {
                failed.insert(record.recordName)
                let index = plan.outcomes.firstIndex { if case .saved(let r) = $0 { r.recordName == record.recordName } else { false } }!
                plan.outcomes[index] = .failed(
                    recordName: record.recordName,
                    error: CloudError(.validatingReferenceError, "VALIDATE reference to \(missing.recordName), which does not exist in this zone"),
                    serverRecord: nil)
            }
        }
        plan.writes.removeAll { failed.contains($0.recordName) }
    }

    /// Deletes (tombstones) every live record with a DELETE_SELF reference to a record deleted here, transitively.
    static func cascadeDeletes(
        _ writes: inout [Record], lastSeq: inout Int64, zoneID: Int64, stamp: ChangeStamp, on connection: PostgresConnection, logger: Logger
    ) async throws {
        var deleted = writes.filter(\.deleted).map(\.recordName)
        var touched = Set(writes.map(\.recordName))
        while !deleted.isEmpty {
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: [])
            builder.append(
                "SELECT \(columns) FROM records r WHERE r.zone_id = \(builder.bind(zoneID)) AND NOT r.deleted AND r.cascade_refs && \(builder.bind(deleted))::text[]")
            var next: [String] = []
            for try await columns in try await connection.query(builder.query, logger: logger).decode(RecordColumns.self) {
                let snapshot = Self.snapshot(columns)
                guard touched.insert(snapshot.recordName).inserted else { continue }
                lastSeq += 1
                writes.append(Record(
                    recordName: snapshot.recordName, recordType: snapshot.recordType, changeSeq: lastSeq, deleted: true,
                    fields: [:], created: snapshot.created, modified: stamp))
                next.append(snapshot.recordName)
            }
            deleted = next
        }
    }

    /// Upserts record versions and advances the database's and zone's change numbers, in one statement.
    /// Versions named in `creates` are inserted only where the name is free or a tombstone; returns the names of
    /// those that met a live record (EXISTS). Every version of one call shares its `modified` stamp (one request,
    /// one writer), bound once; `created` is that stamp for a new record (or one replacing a tombstone) and stays
    /// as stored otherwise — the rule `ModificationPlan` follows, applied by the database.
    @discardableResult
    static func store(
        _ writes: [Record], creates: Set<String> = [], zoneID: Int64, databaseID: Int64, lastSeq: Int64,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Set<String> {
        let stamp = writes.last!.modified
        var builder = SQLBuilder()
        let zone = builder.bind(zoneID)
        let stampColumns = "\(builder.bind(stamp.timestamp)), \(builder.bind(stamp.userRecordName)), \(builder.bind(stamp.deviceID))"
        func upsert(_ rows: [Record], onlyOverTombstones: Bool) -> String {
            let cascadeRefs = rows.map { record in
                let targets = Reference.all(in: record.fields).filter { $0.action == .deleteSelf }
                return targets.isEmpty ? "[]" : JSONWriter.encode(.array(targets.map { .string($0.recordName) }))
            }
            let assetRefs = rows.map { record in
                let checksums = Self.assetChecksums(in: record.fields)
                return checksums.isEmpty ? "[]" : JSONWriter.encode(.array(checksums.map(JSONValue.string)))
            }
            return """
                INSERT INTO records (zone_id, record_name, record_type, change_seq, deleted, fields, cascade_refs, asset_refs,
                    created_ms, created_by, created_device, modified_ms, modified_by, modified_device)
                SELECT \(zone), u.name, u.type, u.seq, u.deleted, u.fields::jsonb,
                    CASE WHEN u.refs = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.refs::jsonb)) END,
                    CASE WHEN u.assets = '[]' THEN '{}'::text[] ELSE ARRAY(SELECT jsonb_array_elements_text(u.assets::jsonb)) END,
                    \(stampColumns), \(stampColumns)
                FROM unnest(\(builder.bind(rows.map(\.recordName)))::text[], \(builder.bind(rows.map(\.recordType)))::text[],
                    \(builder.bind(rows.map(\.changeSeq)))::int8[], \(builder.bind(rows.map(\.deleted)))::bool[],
                    \(builder.bind(rows.map(\.encodedFields)))::text[], \(builder.bind(cascadeRefs))::text[],
                    \(builder.bind(assetRefs))::text[])
                    AS u(name, type, seq, deleted, fields, refs, assets)
                ON CONFLICT (zone_id, record_name) DO UPDATE SET
                    record_type = EXCLUDED.record_type, change_seq = EXCLUDED.change_seq, deleted = EXCLUDED.deleted,
                    fields = EXCLUDED.fields, cascade_refs = EXCLUDED.cascade_refs, asset_refs = EXCLUDED.asset_refs,
                    created_ms = CASE WHEN records.deleted THEN EXCLUDED.created_ms ELSE records.created_ms END,
                    created_by = CASE WHEN records.deleted THEN EXCLUDED.created_by ELSE records.created_by END,
                    created_device = CASE WHEN records.deleted THEN EXCLUDED.created_device ELSE records.created_device END,
                    modified_ms = EXCLUDED.modified_ms, modified_by = EXCLUDED.modified_by, modified_device = EXCLUDED.modified_device
                \(onlyOverTombstones ? "WHERE records.deleted" : "")
                RETURNING record_name
                """
        }
        let fresh = writes.filter { creates.contains($0.recordName) }
        let others = writes.filter { !creates.contains($0.recordName) }
        let last = builder.bind(lastSeq)
        builder.append(
            """
            WITH created AS (\(upsert(fresh, onlyOverTombstones: true))),
            upserted AS (\(upsert(others, onlyOverTombstones: false))),
            advanced AS (UPDATE databases SET change_seq = \(last) WHERE id = \(builder.bind(databaseID)) RETURNING 1),
            zoned AS (UPDATE zones SET change_seq = \(last), modified_ms = \(builder.bind(stamp.timestamp)) WHERE id = \(zone) RETURNING 1)
            SELECT record_name FROM created
            """)
        var inserted = Set<String>()
        for try await name in try await connection.query(builder.query, logger: logger).decode(String.self) { inserted.insert(name) }
        return Set(fresh.map(\.recordName)).subtracting(inserted)
    }

    /// Every live record of `types` in a zone, with the database's change head they reflect (one snapshot), for
    /// callers that keep a derived index and rebuild it when the head moves.
    public func records(ofTypes types: [String], zoneName: String, in database: DatabaseRef, logger: Logger) async throws -> (records: [Record], head: Int64) {
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
            for try await head in try await connection.query("SELECT change_seq FROM databases WHERE id = \(database.id)", logger: logger).decode(Int64.self) {
                return head
            }
            return 0
        }
    }

    // MARK: records/lookup

    /// The live records with these names, in request order; `nil` for a name that does not exist.
    public func lookup(
        _ names: [String], zoneName: String, desiredKeys: [String]?, in database: DatabaseRef, logger: Logger
    ) async throws -> [RecordSnapshot?] {
        try await self.client.reading { connection in
            let zoneID = try await self.zoneID(named: zoneName, in: database, on: connection, logger: logger)
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: desiredKeys)
            builder.append(
                "SELECT \(columns) FROM records r WHERE r.zone_id = \(builder.bind(zoneID)) AND NOT r.deleted AND r.record_name = ANY(\(builder.bind(names)))")
            var found: [String: RecordSnapshot] = [:]
            for try await columns in try await connection.query(builder.query, logger: logger).decode(RecordColumns.self) {
                found[columns.0] = Self.snapshot(columns)
            }
            return names.map { found[$0] }
        }
    }
}
