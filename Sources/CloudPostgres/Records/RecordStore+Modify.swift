import CloudCore
import CloudRuntime
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// The write path of `records/modify`: an optimistic read and a guarded one-statement store, or one transaction under
/// the database lock; either way the plan from `ModificationPlan`, reference checks, cascades and the upsert.
extension RecordStore {
    /// Applies a batch of operations in one transaction. `atomic` (custom zones only) makes it all or nothing.
    /// With `idempotency`, a batch whose key was seen before is not applied again: its stored answer returns.
    /// `check` is the layer above's rule for the records the batch would write (`WriteRules`); a refused record
    /// fails alone, like any per-record failure. `person` is the signed-in person writing the public database (nil:
    /// an operator): each operation must then be allowed by its record type's permissions (`publicRefusal`).
    public func modify(
        _ operations: [RecordOperation], zoneName: String, atomic requestedAtomic: Bool?, in database: DatabaseRef,
        stamp: ChangeStamp, idempotency: IdempotentWrite? = nil, check: BatchCheck? = nil, person: String? = nil,
        logger: Logger
    ) async throws -> ModifyResult {
        guard operations.count <= self.limits.maxOperations else {
            throw CloudError.badRequest(
                "a request may hold at most \(self.limits.maxOperations) operations; this one has \(operations.count): split it")
        }
        let batch = WriteBatch(
            operations: operations, zoneName: zoneName, atomic: zoneName != defaultZoneName && (requestedAtomic ?? true), database: database,
            stamp: stamp, idempotency: idempotency, check: check, person: person)
        do {
            let result = try await self.groupCommit.write(
                batch, key: database.id % Self.writeLanes, alone: { try await self.writeAlone($0, logger: logger) },
                together: { try await self.writeTogether($0, logger: logger) })
            if result.outcomes.contains(where: { !$0.isFailure }) { self.changes.committed([database.id]) }
            return result
        } catch let failure as AtomicBatchFailed {
            // Rolled back, so nothing is stored: a retry runs again (and, names still taken, fails the same way).
            let result = ModifyResult(outcomes: failure.outcomes, atomicFailed: true)
            return ModifyResult(outcomes: failure.outcomes, atomicFailed: true, answer: try idempotency?.answer(result))
        }
    }

    /// A batch written on its own: optimistically, or under the lock when another write came between.
    func writeAlone(_ batch: WriteBatch, logger: Logger) async throws -> ModifyResult {
        do {
            if let written = try await self.client.reading({ try await self.writeOptimistically(batch, on: $0, logger: logger) }) {
                return written
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            // The key's answer was stored meanwhile by a write that changed no record: the lock finds it. (Under
            // the lock no other writer can store it: each holds the database's row while it does.)
            self.retriedUnderLock.add(1, ordering: .relaxed)
        }
        return try await self.client.transaction(logger: logger) { try await self.writeUnderLock(batch, on: $0, logger: logger) }
    }

    /// One `records/modify` request, as `modify` received it.
    struct WriteBatch: Sendable {
        var operations: [RecordOperation]
        var zoneName: String
        var atomic: Bool
        var database: DatabaseRef
        var stamp: ChangeStamp
        var idempotency: IdempotentWrite?
        var check: BatchCheck?
        var person: String?
    }

    /// What a write plans from: the database's last change number, the zone, the schema in force and where it is,
    /// and the stored versions of the records the batch looks up.
    struct WriteBasis {
        var head: Int64
        var zoneID: Int64
        var schema: Schema?
        var scope: SchemaScope
        var existing: [String: Record]
    }

    /// The optimistic write (docs/SYNC.md, "Why a token never skips a committed change"), on a connection outside any
    /// transaction block: one read without the lock, the plan, then one call that writes only if the database's change
    /// number is still the one read (so nothing was written in between) and commits inside itself. Two round trips
    /// where the locked write makes five (BEGIN, lock, read, store, COMMIT), and the lock is held for the store alone.
    /// The commit happens inside the call, before its row is sent: a statement that commits by itself does so after its
    /// rows are sent, a backend stopped mid-commit sends them anyway (then its error), and PostgresNIO takes that for
    /// success. nil, having written nothing: this batch needs the lock (it references assets, extends the schema, or
    /// keeps an answer without writing), or another write came between the read and the store; the caller then
    /// writes under the lock.
    func writeOptimistically(_ batch: WriteBatch, on connection: PostgresConnection, logger: Logger) async throws -> ModifyResult? {
        let (stored, basis) = try await self.read(for: batch, on: connection, logger: logger)
        if let stored { return ModifyResult(outcomes: [], atomicFailed: false, answer: stored) }
        do {
            return try await self.write(batch, on: basis, holdingLock: false, connection, logger: logger)
        } catch is DatabaseMovedOn {
            self.retriedUnderLock.add(1, ordering: .relaxed)
            return nil
        }
    }

    /// The write under the database lock (docs/SYNC.md): the same read once the lock is held. The key's answer is
    /// then read under the lock too: a retry racing its original waits for it, then finds its answer.
    func writeUnderLock(_ batch: WriteBatch, on connection: PostgresConnection, logger: Logger) async throws -> ModifyResult {
        _ = try await Self.lockChangeSequence(of: batch.database, on: connection, logger: logger)
        return try await self.writeLocked(batch, from: self.read(for: batch, on: connection, logger: logger), on: connection, logger: logger)
    }

    /// With the database's lock held: the answer stored for the batch's key, or the batch written on what `read(for:)`
    /// found.
    func writeLocked(_ batch: WriteBatch, from found: (StoredAnswer?, WriteBasis), on connection: PostgresConnection, logger: Logger)
        async throws -> ModifyResult
    {
        if let stored = found.0 { return ModifyResult(outcomes: [], atomicFailed: false, answer: stored) }
        guard let result = try await self.write(batch, on: found.1, holdingLock: true, connection, logger: logger) else {
            throw CloudError(.internalError, "a write under the database lock asked for the lock")
        }
        return result
    }

    /// What a write plans from, in one statement (`ReadForWrite`, one snapshot): the key's stored answer, if any (a key
    /// reused for another request is BAD_REQUEST), or the counter, zone, schema and the batch's records, creates
    /// included (without the lock the plan itself must find a name that is taken).
    func read(for batch: WriteBatch, on connection: PostgresConnection, logger: Logger) async throws -> (StoredAnswer?, WriteBasis) {
        let names = batch.operations.filter { $0.refusal == nil }.map(\.recordName)
        let (database, zone, key) = (batch.database.id, batch.zoneName, batch.idempotency?.key)
        let rows =
            if names.count == 1 {
                try await connection.execute(ReadOneForWrite(databaseID: database, zoneName: zone, key: key, recordName: names[0]), logger: logger)
            } else {
                try await connection.execute(ReadForWrite(databaseID: database, zoneName: zone, key: key, recordNames: names), logger: logger)
            }
        var start: BeginWrite.Row?
        var stored: StoredAnswer?
        var existing: [String: Record] = [:]
        for try await row in rows {
            start = row.start
            if let answer = try Self.storedAnswer(row.found.answer, to: batch.idempotency) { stored = answer }
            if let snapshot = row.found.record {
                let record = try Self.record(from: snapshot)
                existing[record.recordName] = record
            }
        }
        guard let start else { throw CloudError.accountErased }
        let (zoneID, schema, scope) = try await self.zoneAndSchema(start, zoneName: batch.zoneName, on: connection, logger: logger)
        return (stored, WriteBasis(head: start.head, zoneID: zoneID, schema: schema, scope: scope, existing: existing))
    }

    /// Plans `batch` on `basis` and stores it. Without `holdingLock`, the store writes only if the database is as
    /// `basis` found it (else `DatabaseMovedOn`), and nil is returned for a batch that needs the lock.
    func write(_ batch: WriteBatch, on basis: WriteBasis, holdingLock: Bool, _ connection: PostgresConnection, logger: Logger) async throws
        -> ModifyResult?
    {
        let (database, stamp, zoneID) = (batch.database, batch.stamp, basis.zoneID)
        func finish(_ result: ModifyResult) async throws -> ModifyResult? {
            guard let idempotency = batch.idempotency else { return result }
            // Keeping an answer without a write cannot be made conditional on the database's change number.
            guard holdingLock else { return nil }
            return try await self.keepAnswer(to: idempotency, of: result, databaseID: database.id, on: connection, logger: logger)
        }
        let operations = Self.allowedOperations(of: batch, on: basis)
        var schema = basis.schema
        if let additions = self.schemaAdditions(for: operations, of: batch, on: basis) {
            guard holdingLock else { return nil }
            schema = try await self.extendSchema(with: additions, in: basis.scope, on: connection, logger: logger)
        }
        var plan = self.plan(operations, of: batch, on: basis, schema: schema)
        // The asset collector deletes under the lock without a new change number, so only the lock keeps an asset.
        if !holdingLock, plan.writes.contains(where: { !$0.deleted && !FieldValue.assetChecksums(in: $0.fields).isEmpty }) { return nil }
        try await Self.checkValidatedReferences(&plan, existing: basis.existing, zoneID: zoneID, on: connection, logger: logger)
        try await Self.checkAssetsExist(&plan, databaseID: database.id, on: connection, logger: logger)
        if batch.atomic, plan.outcomes.contains(where: \.isFailure) {
            return try await finish(ModifyResult(outcomes: Self.atomicFailure(plan.outcomes), atomicFailed: true))
        }
        var writes = plan.writes
        var lastSeq = plan.lastSeq
        try await Self.cascadeDeletes(&writes, lastSeq: &lastSeq, zoneID: zoneID, stamp: stamp, on: connection, logger: logger)
        guard !writes.isEmpty else { return try await finish(ModifyResult(outcomes: plan.outcomes, atomicFailed: false)) }
        // The answer if every create finds its name free (almost always), stored by the upsert's own statement:
        // one round trip fewer. A create that meets a live record changes the answer, which is then replaced.
        var expected = ModifyResult(outcomes: plan.outcomes, atomicFailed: false)
        let kept = try batch.idempotency.map {
            KeptAnswer(key: $0.key, requestHash: $0.requestHash, answer: try $0.answer(expected))
        }
        expected.answer = kept?.answer
        let taken = try await Self.store(
            writes, creates: plan.creates, zoneID: zoneID, databaseID: database.id, lastSeq: lastSeq, expectedHead: holdingLock ? nil : basis.head,
            keeping: kept, committing: !holdingLock, on: connection, logger: logger)
        // Nothing is taken, as creates were looked up and nothing was written since (without the lock the call rolls
        // back and writes nothing otherwise).
        guard !taken.isEmpty else { return expected }
        let current = try await Self.loadRecords(Array(taken), zoneID: zoneID, on: connection, logger: logger)
        let outcomes = plan.outcomes.map { outcome -> OperationOutcome in
            guard case .saved(let record) = outcome, taken.contains(record.recordName) else { return outcome }
            return .failed(
                recordName: record.recordName, error: CloudError(.exists, "record to insert already exists"), serverRecord: current[record.recordName]
            )
        }
        // An atomic batch with a taken name must leave nothing behind: throwing rolls the transaction back.
        if batch.atomic { throw AtomicBatchFailed(outcomes: Self.atomicFailure(outcomes)) }
        guard let idempotency = batch.idempotency else { return ModifyResult(outcomes: outcomes, atomicFailed: false) }
        return try await self.keepAnswer(
            to: idempotency, of: ModifyResult(outcomes: outcomes, atomicFailed: false), databaseID: database.id, on: connection, logger: logger)
    }

    /// The batch's operations, each refused that the public database's permissions do not allow its writer.
    static func allowedOperations(of batch: WriteBatch, on basis: WriteBasis) -> [RecordOperation] {
        guard batch.database.scope == .public, let person = batch.person else { return batch.operations }
        let rules = basis.schema ?? Schema(recordTypes: [:])
        let existing = Self.judgedRecords(of: batch, on: basis)
        return batch.operations.map { operation in
            var operation = operation
            operation.refusal = operation.refusal ?? rules.publicRefusal(of: operation, existing: existing[operation.recordName], by: person)
            return operation
        }
    }

    /// The stored records rules judge the batch's operations on: a create is judged as a create, so one over a live
    /// name is the plan's EXISTS, not a permission refusal.
    static func judgedRecords(of batch: WriteBatch, on basis: WriteBasis) -> [String: Record] {
        let creates = Set(batch.operations.filter { $0.type == .create }.map(\.recordName))
        return basis.existing.filter { !creates.contains($0.key) }
    }

    /// The record types and fields a development schema gains from `operations` (nil: none, or no just-in-time schema).
    func schemaAdditions(for operations: [RecordOperation], of batch: WriteBatch, on basis: WriteBasis) -> Schema? {
        guard let deployed = basis.schema, basis.scope.isDevelopment, self.justInTimeSchema, batch.person == nil else { return nil }
        return deployed.additions(for: operations, existing: Self.judgedRecords(of: batch, on: basis), in: batch.database.scope)
    }

    /// The plan of `operations` on `basis`, with the refusals of the layer above's rules (`batch.check`).
    func plan(_ operations: [RecordOperation], of batch: WriteBatch, on basis: WriteBasis, schema: Schema?) -> ModificationPlan {
        var plan = ModificationPlan(
            operations: operations, existing: basis.existing, firstSeq: basis.head + 1, stamp: batch.stamp,
            maxRecordBytes: self.limits.maxRecordBytes, schema: schema, scope: batch.database.scope)
        if let check = batch.check {
            for (name, refusal) in check(plan.writes).sorted(by: { $0.key < $1.key }) { plan.fail(name, refusal) }
        }
        return plan
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
        throw CloudError.accountErased
    }

    /// The first statement of an import's write: takes the database lock, finds the zone and the schema version
    /// in one round trip. Returns the last change number, the zone's id, the schema in force and where it is.
    func beginWrite(zoneName: String, in database: DatabaseRef, on connection: PostgresConnection, logger: Logger) async throws -> (
        head: Int64, zoneID: Int64, schema: Schema?, scope: SchemaScope
    ) {
        for try await row in try await connection.execute(BeginWrite(databaseID: database.id, zoneName: zoneName), logger: logger) {
            let (zoneID, schema, scope) = try await self.zoneAndSchema(row, zoneName: zoneName, on: connection, logger: logger)
            return (row.head, zoneID, schema, scope)
        }
        throw CloudError.accountErased
    }

    /// The zone's id (ZONE_NOT_FOUND when it has none), the schema in force and where it is, from a write's first row.
    func zoneAndSchema(_ row: BeginWrite.Row, zoneName: String, on connection: PostgresConnection, logger: Logger) async throws -> (
        zoneID: Int64, schema: Schema?, scope: SchemaScope
    ) {
        guard let zoneID = row.zoneID else { throw CloudError.zoneNotFound(zoneName) }
        let (schema, scope) = try await self.schemaInForce(row, on: connection, logger: logger)
        return (zoneID, schema, scope)
    }

    /// The schema in force and where it is, from a write's first row.
    func schemaInForce(_ row: BeginWrite.Row, on connection: PostgresConnection, logger: Logger) async throws -> (schema: Schema?, scope: SchemaScope)
    {
        let scope = SchemaScope(container: row.container, environment: row.environment)
        // Nothing deployed yet: development takes anything, production nothing (CloudKit's refuses what was never
        // deployed), so a fresh install cannot fill production with types no schema will accept later.
        guard let schemaVersion = row.schemaVersion else { return (scope.isDevelopment ? nil : Schema(recordTypes: [:]), scope) }
        return (try await self.schema(version: schemaVersion, on: connection, logger: logger), scope)
    }

    /// The answer stored for `write`'s key, if any; a key reused for another request is BAD_REQUEST.
    static func storedAnswer(_ columns: (requestHash: Data, status: Int, body: Data)?, to write: IdempotentWrite?) throws -> StoredAnswer? {
        guard let write, let columns else { return nil }
        guard columns.requestHash == write.requestHash else {
            throw CloudError.badRequest("Idempotency-Key \(write.key) was already used for a different request; use a new key for a new request")
        }
        return StoredAnswer(status: columns.status, body: Array(columns.body))
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
        for record in saved {
            if let missing = Reference.all(in: record.fields).first(where: { $0.action == .validate && !live.contains($0.recordName) }) {
                plan.fail(
                    record.recordName,
                    CloudError(.validatingReferenceError, "VALIDATE reference to \(missing.recordName), which does not exist in this zone"))
            }
        }
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
                "SELECT \(columns) FROM records r WHERE r.zone_id = \(builder.bind(zoneID)) AND NOT r.deleted AND r.cascade_refs && \(builder.bind(deleted))::text[]"
            )
            var next: [String] = []
            for try await row in try await connection.query(builder.query, logger: logger) {
                let snapshot = try Self.snapshot(row)
                guard touched.insert(snapshot.recordName).inserted else { continue }
                lastSeq += 1
                writes.append(
                    Record(
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
    /// With `expectedHead`, writes only if the database's change number is still that one, else `DatabaseMovedOn`
    /// (nil: the caller holds the database lock). With `keeping`, the same statement stores an idempotent write's answer.
    /// `committing`: the connection is outside a transaction block and the call commits before it answers.
    @discardableResult
    static func store(
        _ writes: [Record], creates: Set<String> = [], zoneID: Int64, databaseID: Int64, lastSeq: Int64, expectedHead: Int64? = nil,
        keeping kept: KeptAnswer? = nil, committing: Bool = false, on connection: PostgresConnection, logger: Logger
    ) async throws -> Set<String> {
        let statement = StoreWrites(
            zoneID: zoneID, databaseID: databaseID, lastSeq: lastSeq, expectedHead: expectedHead, stamp: writes.last!.modified,
            creates: writes.filter { creates.contains($0.recordName) }, others: writes.filter { !creates.contains($0.recordName) },
            kept: kept, commit: committing)
        var stored: StoreWrites.Row?
        for try await row in try await connection.execute(statement, logger: logger) { stored = row }
        guard let stored, stored.wrote else { throw DatabaseMovedOn() }
        return Set(statement.creates.map(\.recordName)).subtracting(stored.created)
    }
}

/// An optimistic write found the database's change number moved on since it read: nothing was written.
struct DatabaseMovedOn: Error {}
