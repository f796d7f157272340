import CloudCore
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Batches written together (`GroupCommit`), of one database or several: one transaction under their databases'
/// locks, one read of everything they name, plans in memory one after the other, one statement storing them all, one
/// commit.
extension RecordStore {
    /// Batches that arrived while another write of their lane ran (`writeLanes`), written in one transaction under
    /// the locks of their databases. Each is planned on what the group read of its own database, overlaid with what
    /// the batches before it wrote there, and numbered after them, so it sees and orders exactly as if each had
    /// committed alone; for each database the group is one writer to every reader. A batch that needs more than its
    /// records (a schema extension, a reference or asset check, a cascade of deletes) stores what came before it, then
    /// it and the rest are written one after the other, each reading its database again. A batch refused before it
    /// writes (its database or zone is gone, its key was used for another request) fails alone; any other error fails
    /// the transaction, and each batch is then written alone.
    func writeTogether(_ batches: [WriteBatch], logger: Logger) async throws -> [Result<ModifyResult, any Error>] {
        try await self.client.transaction(logger: logger) { connection in
            var starts: [Int64: BeginWrite.Row] = [:]
            let ids = Array(Set(batches.map(\.database.id))).sorted()
            for try await row in try await connection.execute(LockDatabases(databaseIDs: ids), logger: logger) { starts[row.databaseID] = row.start }
            var rules: [Int64: (schema: Schema?, scope: SchemaScope)] = [:]
            for (id, start) in starts { rules[id] = try await self.schemaInForce(start, on: connection, logger: logger) }
            let heads = starts.mapValues(\.head)
            var group = try await WriteGroup.read(batches.filter { heads[$0.database.id] != nil }, heads: heads, on: connection, logger: logger)
            var results: [Result<ModifyResult, any Error>] = []
            var inMemory = true
            for batch in batches {
                guard let (schema, scope) = rules[batch.database.id] else {
                    results.append(.failure(CloudError.accountErased))
                    continue
                }
                if inMemory {
                    do {
                        if let result = try self.plan(batch, in: &group, schema: schema, scope: scope) {
                            results.append(.success(result))
                            continue
                        }
                    } catch let refusal as CloudError {
                        results.append(.failure(refusal))
                        continue
                    }
                    try await group.store(on: connection, logger: logger)
                    inMemory = false
                }
                let found: (StoredAnswer?, WriteBasis)
                do { found = try await self.read(for: batch, on: connection, logger: logger) } catch let refusal as CloudError {
                    results.append(.failure(refusal))
                    continue
                }
                results.append(.success(try await self.writeLocked(batch, from: found, on: connection, logger: logger)))
            }
            try await group.store(on: connection, logger: logger)
            self.writtenTogether.add(batches.count, ordering: .relaxed)
            return results
        }
    }

    /// Plans `batch` on what `group` holds and adds its writes and kept answer to it. nil, having changed nothing:
    /// the batch needs the database for more than its records.
    func plan(_ batch: WriteBatch, in group: inout WriteGroup, schema: Schema?, scope: SchemaScope) throws -> ModifyResult? {
        let database = batch.database.id
        if let idempotency = batch.idempotency,
            let stored = try Self.storedAnswer(group.answers[WriteGroup.AnswerKey(databaseID: database, key: idempotency.key)], to: idempotency)
        {
            return ModifyResult(outcomes: [], atomicFailed: false, answer: stored)
        }
        guard let zoneID = group.zones[WriteGroup.ZoneKey(databaseID: database, zoneName: batch.zoneName)] else {
            throw CloudError.zoneNotFound(batch.zoneName)
        }
        let names = batch.operations.filter { $0.refusal == nil }.map(\.recordName)
        let basis = WriteBasis(
            head: group.heads[database]!, zoneID: zoneID, schema: schema, scope: scope, existing: group.records(names, inZone: zoneID))
        let operations = Self.allowedOperations(of: batch, on: basis)
        guard self.schemaAdditions(for: operations, of: batch, on: basis) == nil else { return nil }
        let plan = self.plan(operations, of: batch, on: basis, schema: schema)
        let needsDatabase = plan.writes.contains { record in
            record.deleted || !FieldValue.assetChecksums(in: record.fields).isEmpty
                || Reference.all(in: record.fields).contains { $0.action == .validate }
        }
        guard !needsDatabase else { return nil }
        let atomicFailure = batch.atomic && plan.outcomes.contains(where: \.isFailure)
        var result =
            atomicFailure
            ? ModifyResult(outcomes: Self.atomicFailure(plan.outcomes), atomicFailed: true)
            : ModifyResult(outcomes: plan.outcomes, atomicFailed: false)
        // The answer first: a batch that fails making it must leave nothing in the group.
        result.answer = try batch.idempotency.map { try $0.answer(result) }
        if !atomicFailure { group.add(plan.writes, of: database, inZone: zoneID, lastSeq: plan.lastSeq) }
        if let idempotency = batch.idempotency, let answer = result.answer {
            group.keep(
                KeptAnswer(key: idempotency.key, requestHash: idempotency.requestHash, answer: answer), of: database, at: batch.stamp.timestamp)
        }
        return result
    }
}

/// What a group of batches reads under its databases' locks and has written so far, not yet stored. Its keys compare
/// names as the database does (`ExactName`).
struct WriteGroup {
    struct ZoneKey: Hashable {
        var databaseID: Int64
        var zoneName: ExactName

        init(databaseID: Int64, zoneName: String) { (self.databaseID, self.zoneName) = (databaseID, ExactName(zoneName)) }
    }

    /// Zone ids are unique across databases.
    struct RecordKey: Hashable {
        var zoneID: Int64
        var name: ExactName

        init(zoneID: Int64, name: String) { (self.zoneID, self.name) = (zoneID, ExactName(name)) }
    }

    struct AnswerKey: Hashable {
        var databaseID: Int64
        var key: ExactName

        init(databaseID: Int64, key: String) { (self.databaseID, self.key) = (databaseID, ExactName(key)) }
    }

    /// Each database's change number after the group's writes so far.
    private(set) var heads: [Int64: Int64]
    private(set) var zones: [ZoneKey: Int64] = [:]
    /// Stored answers, the group's own included.
    private(set) var answers: [AnswerKey: (requestHash: Data, status: Int, body: Data)] = [:]
    /// Stored records the batches name, overlaid with the group's writes.
    private var records: [RecordKey: Record] = [:]
    private var writes: [(zoneID: Int64, record: Record)] = []
    private var moved: Set<Int64> = []
    private var kept: [(databaseID: Int64, answer: KeptAnswer, at: Int64)] = []

    private init(heads: [Int64: Int64]) { self.heads = heads }

    /// The zones, records and answers `batches` name, in one statement (and one more when some carry a key).
    static func read(_ batches: [RecordStore.WriteBatch], heads: [Int64: Int64], on connection: PostgresConnection, logger: Logger) async throws
        -> WriteGroup
    {
        var group = WriteGroup(heads: heads)
        var asked: [(databaseID: Int64, zoneName: String, recordName: String)] = []
        var seen: [ZoneKey: Set<ExactName>] = [:]
        for batch in batches {
            let zone = ZoneKey(databaseID: batch.database.id, zoneName: batch.zoneName)
            for name in [""] + batch.operations.filter({ $0.refusal == nil }).map(\.recordName)
            where seen[zone, default: []].insert(ExactName(name)).inserted {
                asked.append((batch.database.id, batch.zoneName, name))
            }
        }
        guard !asked.isEmpty else { return group }
        for try await row in try await connection.execute(ReadGroup(asked: asked), logger: logger) {
            group.zones[ZoneKey(databaseID: row.databaseID, zoneName: row.zoneName)] = row.zoneID
            if let snapshot = row.record {
                let record = try RecordStore.record(from: snapshot)
                group.records[RecordKey(zoneID: row.zoneID, name: record.recordName)] = record
            }
        }
        let keyed = batches.compactMap { batch in batch.idempotency.map { (batch.database.id, $0.key) } }
        if !keyed.isEmpty {
            for try await (database, key, hash, status, answer) in try await connection.query(
                """
                SELECT database_id, key, request_hash, status, answer FROM idempotent_writes
                WHERE (database_id, key) IN (SELECT * FROM unnest(\(keyed.map(\.0))::bigint[], \(keyed.map(\.1))::text[]))
                """, logger: logger
            ).decode((Int64, String, Data, Int, Data).self) { group.answers[AnswerKey(databaseID: database, key: key)] = (hash, status, answer) }
        }
        return group
    }

    func records(_ names: [String], inZone zoneID: Int64) -> [String: Record] {
        var found: [String: Record] = [:]
        for name in names { found[name] = self.records[RecordKey(zoneID: zoneID, name: name)] }
        return found
    }

    mutating func add(_ writes: [Record], of databaseID: Int64, inZone zoneID: Int64, lastSeq: Int64) {
        guard !writes.isEmpty else { return }
        for record in writes {
            self.records[RecordKey(zoneID: zoneID, name: record.recordName)] = record
            self.writes.append((zoneID, record))
        }
        self.heads[databaseID] = lastSeq
        self.moved.insert(databaseID)
    }

    mutating func keep(_ answer: KeptAnswer, of databaseID: Int64, at timestamp: Int64) {
        self.answers[AnswerKey(databaseID: databaseID, key: answer.key)] = (answer.requestHash, answer.answer.status, Data(answer.answer.body))
        self.kept.append((databaseID, answer, timestamp))
    }

    /// Stores what the group has written so far in one statement. A record written twice is stored once, as last
    /// written: no reader could see the earlier version, which the same commit replaces.
    mutating func store(on connection: PostgresConnection, logger: Logger) async throws {
        guard !self.writes.isEmpty || !self.kept.isEmpty else { return }
        var last: [RecordKey: Int] = [:]
        var zoneHeads: [Int64: (seq: Int64, modifiedMs: Int64)] = [:]
        for (index, write) in self.writes.enumerated() {
            last[RecordKey(zoneID: write.zoneID, name: write.record.recordName)] = index
            zoneHeads[write.zoneID] = (write.record.changeSeq, write.record.modified.timestamp)
        }
        let statement = StoreGroup(
            heads: self.moved.map { ($0, self.heads[$0]!) }, zoneHeads: zoneHeads.map { ($0.key, $0.value.seq, $0.value.modifiedMs) },
            kept: self.kept,
            writes: last.values.sorted().map { self.writes[$0] })
        for try await _ in try await connection.execute(statement, logger: logger) {}
        self.writes = []
        self.moved = []
        self.kept = []
    }
}
