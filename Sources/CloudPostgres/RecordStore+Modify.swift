import CloudCore
import Foundation
import Logging
import PostgresNIO

/// The write path of `records/modify`: one transaction under the database lock, the plan from `ModificationPlan`,
/// reference checks, cascades and the one-statement upsert.
extension RecordStore {
    /// Applies a batch of operations in one transaction. `atomic` (custom zones only) makes it all or nothing.
    /// With `idempotency`, a batch whose key was seen before is not applied again: its stored answer returns.
    /// `check` is the layer above's rule for each record the batch would save (`WriteRules`); a refused record
    /// fails alone, like any per-record failure. `person` is the signed-in person writing the public database (nil:
    /// an operator): each operation must then be allowed by its record type's permissions (`publicRefusal`).
    public func modify(
        _ operations: [RecordOperation], zoneName: String, atomic requestedAtomic: Bool?, in database: DatabaseRef,
        stamp: ChangeStamp, idempotency: IdempotentWrite? = nil, check: (@Sendable (Record) -> CloudError?)? = nil, person: String? = nil,
        logger: Logger
    ) async throws -> ModifyResult {
        guard operations.count <= self.limits.maxOperations else {
            throw CloudError.badRequest(
                "a request may hold at most \(self.limits.maxOperations) operations; this one has \(operations.count): split it")
        }
        let atomic = zoneName != defaultZoneName && (requestedAtomic ?? true)
        let limits = self.limits
        do {
            let result = try await self.client.transaction(logger: logger) { connection in
                let (head, zoneID, deployed, scope) = try await self.beginWrite(zoneName: zoneName, in: database, on: connection, logger: logger)
                // A create needs no lookup: the upsert refuses a create whose name is live, and only those are loaded.
                let lookedUp = operations.filter { $0.type != .create && $0.refusal == nil }.map(\.recordName)
                // The key's answer is read under the database lock: a retry racing its original waits for it, then
                // finds its answer.
                let (stored, existing) = try await Self.lookUp(
                    lookedUp, answerTo: idempotency, zoneID: zoneID, databaseID: database.id, on: connection, logger: logger)
                if let stored { return ModifyResult(outcomes: [], atomicFailed: false, answer: stored) }
                func finish(_ result: ModifyResult) async throws -> ModifyResult {
                    guard let idempotency else { return result }
                    return try await self.keepAnswer(to: idempotency, of: result, databaseID: database.id, on: connection, logger: logger)
                }
                var operations = operations
                if database.scope == .public, let person {
                    let rules = deployed ?? Schema(recordTypes: [:])
                    for index in operations.indices {
                        let operation = operations[index]
                        operations[index].refusal =
                            operation.refusal ?? rules.publicRefusal(of: operation, existing: existing[operation.recordName], by: person)
                    }
                }
                var schema = deployed
                if let deployed, scope.isDevelopment, self.justInTimeSchema, person == nil,
                    let additions = deployed.additions(for: operations, existing: existing, in: database.scope)
                {
                    schema = try await self.extendSchema(with: additions, in: scope, on: connection, logger: logger)
                }
                var plan = ModificationPlan(
                    operations: operations, existing: existing, firstSeq: head + 1, stamp: stamp,
                    maxRecordBytes: limits.maxRecordBytes, schema: schema, scope: database.scope)
                if let check {
                    for record in plan.writes where !record.deleted {
                        if let refusal = check(record) { plan.fail(record.recordName, refusal) }
                    }
                }
                try await Self.checkValidatedReferences(&plan, existing: existing, zoneID: zoneID, on: connection, logger: logger)
                try await Self.checkAssetsExist(&plan, databaseID: database.id, on: connection, logger: logger)
                if atomic, plan.outcomes.contains(where: \.isFailure) {
                    return try await finish(ModifyResult(outcomes: Self.atomicFailure(plan.outcomes), atomicFailed: true))
                }
                var writes = plan.writes
                var lastSeq = plan.lastSeq
                try await Self.cascadeDeletes(&writes, lastSeq: &lastSeq, zoneID: zoneID, stamp: stamp, on: connection, logger: logger)
                guard !writes.isEmpty else { return try await finish(ModifyResult(outcomes: plan.outcomes, atomicFailed: false)) }
                // The answer if every create finds its name free (almost always), stored by the upsert's own statement:
                // one round trip fewer. A create that meets a live record changes the answer, which is then replaced.
                var expected = ModifyResult(outcomes: plan.outcomes, atomicFailed: false)
                let kept = try idempotency.map {
                    KeptAnswer(key: $0.key, requestHash: $0.requestHash, answer: try $0.answer(expected), createdMs: stamp.timestamp)
                }
                expected.answer = kept?.answer
                let taken = try await Self.store(
                    writes, creates: plan.creates, zoneID: zoneID, databaseID: database.id, lastSeq: lastSeq, keeping: kept, on: connection,
                    logger: logger)
                guard !taken.isEmpty else { return expected }
                let current = try await Self.loadRecords(Array(taken), zoneID: zoneID, on: connection, logger: logger)
                let outcomes = plan.outcomes.map { outcome -> OperationOutcome in
                    guard case .saved(let record) = outcome, taken.contains(record.recordName) else { return outcome }
                    return .failed(
                        recordName: record.recordName, error: CloudError(.exists, "record to insert already exists"),
                        serverRecord: current[record.recordName])
                }
                // An atomic batch with a taken name must leave nothing behind: throwing rolls the transaction back.
                if atomic { throw AtomicBatchFailed(outcomes: Self.atomicFailure(outcomes)) }
                return try await finish(ModifyResult(outcomes: outcomes, atomicFailed: false))
            }
            if result.outcomes.contains(where: { !$0.isFailure }) { self.changes.committed([database.id]) }
            return result
        } catch let failure as AtomicBatchFailed {
            // Rolled back, so nothing is stored: a retry runs again (and, names still taken, fails the same way).
            let result = ModifyResult(outcomes: failure.outcomes, atomicFailed: true)
            return ModifyResult(outcomes: failure.outcomes, atomicFailed: true, answer: try idempotency?.answer(result))
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
    /// in one round trip. Returns the last change number, the zone's id, the schema in force and where it is.
    func beginWrite(zoneName: String, in database: DatabaseRef, on connection: PostgresConnection, logger: Logger) async throws -> (
        head: Int64, zoneID: Int64, schema: Schema?, scope: SchemaScope
    ) {
        for try await row in try await connection.execute(BeginWrite(databaseID: database.id, zoneName: zoneName), logger: logger) {
            guard let zoneID = row.zoneID else { throw CloudError(.zoneNotFound, "zone \(zoneName) does not exist") }
            let scope = SchemaScope(container: row.container, environment: row.environment)
            guard let schemaVersion = row.schemaVersion else { return (row.head, zoneID, nil, scope) }
            return (row.head, zoneID, try await self.schema(version: schemaVersion, on: connection, logger: logger), scope)
        }
        throw CloudError(.internalError, "database \(database.id) vanished")
    }

    /// The stored answer to `write`'s key (a key reused for another request is BAD_REQUEST) and the stored versions
    /// of `names`, in one round trip; none when there is nothing to look up.
    static func lookUp(
        _ names: [String], answerTo write: IdempotentWrite?, zoneID: Int64, databaseID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws -> (answer: StoredAnswer?, records: [String: Record]) {
        guard write != nil || !names.isEmpty else { return (nil, [:]) }
        var answer: StoredAnswer?
        var records: [String: Record] = [:]
        let statement = WriteLookup(databaseID: databaseID, key: write?.key, zoneID: zoneID, recordNames: names)
        for try await row in try await connection.execute(statement, logger: logger) {
            if let write, let columns = row.answer {
                guard columns.requestHash == write.requestHash else {
                    throw CloudError.badRequest(
                        "Idempotency-Key \(write.key) was already used for a different request; use a new key for a new request")
                }
                answer = StoredAnswer(status: columns.status, body: Array(columns.body))
            }
            if let columns = row.record {
                let record = try Self.record(from: Self.snapshot(columns))
                records[record.recordName] = record
            }
        }
        return (answer, records)
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
            for try await columns in try await connection.query(builder.query, logger: logger).decode(RecordColumns.self) {
                let snapshot = Self.snapshot(columns)
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
    /// With `keeping`, the same statement stores an idempotent write's answer.
    @discardableResult
    static func store(
        _ writes: [Record], creates: Set<String> = [], zoneID: Int64, databaseID: Int64, lastSeq: Int64, keeping kept: KeptAnswer? = nil,
        on connection: PostgresConnection, logger: Logger
    ) async throws -> Set<String> {
        let statement = StoreWrites(
            zoneID: zoneID, databaseID: databaseID, lastSeq: lastSeq, stamp: writes.last!.modified,
            creates: writes.filter { creates.contains($0.recordName) }, others: writes.filter { !creates.contains($0.recordName) })
        var inserted = Set<String>()
        if let kept {
            for try await name in try await connection.execute(StoreWritesKeepingAnswer(writes: statement, kept: kept), logger: logger) {
                inserted.insert(name)
            }
        } else {
            for try await name in try await connection.execute(statement, logger: logger) { inserted.insert(name) }
        }
        return Set(statement.creates.map(\.recordName)).subtracting(inserted)
    }
}
