import CloudCore
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Batches of one database written together (`GroupCommit`): one transaction under the database lock, one read of
/// everything they name, plans in memory one after the other, one statement storing them all, one commit.
extension RecordStore {
    /// Batches of one database that arrived while another of its writes ran, written in one transaction under the
    /// lock. Each is planned on what the group read, overlaid with what the batches before it wrote, and numbered after
    /// them, so it sees and orders exactly as if each had committed alone; the group is one writer to every reader.
    /// A batch that needs more than its records (a schema extension, a reference or asset check, a cascade of
    /// deletes) stores what came before it, then it and the rest are written one after the other, each reading the
    /// database again. A batch refused before it writes (its zone is gone, its key was used for another request)
    /// fails alone; any other error fails the transaction, and each batch is then written alone.
    func writeTogether(_ batches: [WriteBatch], logger: Logger) async throws -> [Result<ModifyResult, any Error>] {
        try await self.client.transaction(logger: logger) { connection in
            let database = batches[0].database
            var start: BeginWrite.Row?
            for try await row in try await connection.execute(BeginWrite(databaseID: database.id, zoneName: batches[0].zoneName), logger: logger) {
                start = row
            }
            guard let start else { throw CloudError.accountErased }
            let (schema, scope) = try await self.schemaInForce(start, on: connection, logger: logger)
            var group = try await WriteGroup.read(batches, head: start.head, on: connection, logger: logger)
            var results: [Result<ModifyResult, any Error>] = []
            var inMemory = true
            for batch in batches {
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
                let stored: StoredAnswer?
                let basis: WriteBasis
                do { (stored, basis) = try await self.read(for: batch, on: connection, logger: logger) } catch let refusal as CloudError {
                    results.append(.failure(refusal))
                    continue
                }
                if let stored {
                    results.append(.success(ModifyResult(outcomes: [], atomicFailed: false, answer: stored)))
                } else if let written = try await self.write(batch, on: basis, holdingLock: true, connection, logger: logger) {
                    results.append(.success(written))
                } else {
                    throw CloudError(.internalError, "a write under the database lock asked for the lock")
                }
            }
            try await group.store(on: connection, logger: logger)
            self.writtenTogether.add(batches.count, ordering: .relaxed)
            return results
        }
    }

    /// Plans `batch` on what `group` holds and adds its writes and kept answer to it. nil, having changed nothing:
    /// the batch needs the database for more than its records.
    func plan(_ batch: WriteBatch, in group: inout WriteGroup, schema: Schema?, scope: SchemaScope) throws -> ModifyResult? {
        if let idempotency = batch.idempotency, let stored = try Self.storedAnswer(group.answers[idempotency.key], to: idempotency) {
            return ModifyResult(outcomes: [], atomicFailed: false, answer: stored)
        }
        guard let zoneID = group.zones[batch.zoneName] else { throw CloudError.zoneNotFound(batch.zoneName) }
        let names = batch.operations.filter { $0.refusal == nil }.map(\.recordName)
        let basis = WriteBasis(head: group.head, zoneID: zoneID, schema: schema, scope: scope, existing: group.records(names, inZone: zoneID))
        let operations = Self.allowedOperations(of: batch, on: basis)
        guard self.schemaAdditions(for: operations, of: batch, on: basis) == nil else { return nil }
        let plan = self.plan(operations, of: batch, on: basis, schema: schema)
        let needsDatabase = plan.writes.contains { record in
            record.deleted || !Self.assetChecksums(in: record.fields).isEmpty
                || Reference.all(in: record.fields).contains { $0.action == .validate }
        }
        guard !needsDatabase else { return nil }
        var result: ModifyResult
        if batch.atomic, plan.outcomes.contains(where: \.isFailure) {
            result = ModifyResult(outcomes: Self.atomicFailure(plan.outcomes), atomicFailed: true)
        } else {
            result = ModifyResult(outcomes: plan.outcomes, atomicFailed: false)
            group.add(plan.writes, inZone: zoneID, lastSeq: plan.lastSeq)
        }
        if let idempotency = batch.idempotency {
            result.answer = try idempotency.answer(result)
            group.keep(KeptAnswer(key: idempotency.key, requestHash: idempotency.requestHash, answer: result.answer!), at: batch.stamp.timestamp)
        }
        return result
    }
}

/// What a group of batches reads under the database lock and has written so far, not yet stored.
struct WriteGroup {
    struct RecordKey: Hashable {
        var zoneID: Int64
        var name: String
    }

    /// The database's change number after the group's writes so far.
    var head: Int64
    var zones: [String: Int64] = [:]
    /// Stored answers by key, the group's own included.
    var answers: [String: (requestHash: Data, status: Int, body: Data)] = [:]
    private let databaseID: Int64
    /// Stored records the batches name, overlaid with the group's writes.
    private var records: [RecordKey: Record] = [:]
    private var writes: [(zoneID: Int64, record: Record)] = []
    private var kept: [(answer: KeptAnswer, at: Int64)] = []

    private init(head: Int64, databaseID: Int64) {
        self.head = head
        self.databaseID = databaseID
    }

    /// The zones, records and answers `batches` name, in one statement (and one more when some carry a key).
    static func read(_ batches: [RecordStore.WriteBatch], head: Int64, on connection: PostgresConnection, logger: Logger) async throws -> WriteGroup {
        let databaseID = batches[0].database.id
        var group = WriteGroup(head: head, databaseID: databaseID)
        var pairs: [(zoneName: String, recordName: String)] = []
        var asked = Set<[String]>()
        for batch in batches {
            for name in [""] + batch.operations.filter({ $0.refusal == nil }).map(\.recordName) where asked.insert([batch.zoneName, name]).inserted {
                pairs.append((batch.zoneName, name))
            }
        }
        for try await row in try await connection.execute(ReadGroup(databaseID: databaseID, pairs: pairs), logger: logger) {
            group.zones[row.zoneName] = row.zoneID
            if let columns = row.record {
                let record = try RecordStore.record(from: RecordStore.snapshot(columns))
                group.records[RecordKey(zoneID: row.zoneID, name: record.recordName)] = record
            }
        }
        let keys = batches.compactMap(\.idempotency?.key)
        if !keys.isEmpty {
            for try await (key, hash, status, answer) in try await connection.query(
                "SELECT key, request_hash, status, answer FROM idempotent_writes WHERE database_id = \(databaseID) AND key = ANY(\(keys))",
                logger: logger
            ).decode((String, Data, Int, Data).self) { group.answers[key] = (hash, status, answer) }
        }
        return group
    }

    func records(_ names: [String], inZone zoneID: Int64) -> [String: Record] {
        var found: [String: Record] = [:]
        for name in names { found[name] = self.records[RecordKey(zoneID: zoneID, name: name)] }
        return found
    }

    mutating func add(_ writes: [Record], inZone zoneID: Int64, lastSeq: Int64) {
        guard !writes.isEmpty else { return }
        for record in writes {
            self.records[RecordKey(zoneID: zoneID, name: record.recordName)] = record
            self.writes.append((zoneID, record))
        }
        self.head = lastSeq
    }

    mutating func keep(_ answer: KeptAnswer, at timestamp: Int64) {
        self.answers[answer.key] = (answer.requestHash, answer.answer.status, Data(answer.answer.body))
        self.kept.append((answer, timestamp))
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
            databaseID: self.databaseID, head: self.head, zoneHeads: zoneHeads.map { ($0.key, $0.value.seq, $0.value.modifiedMs) },
            kept: self.kept, writes: self.writes.indices.filter { last[RecordKey(zoneID: self.writes[$0].zoneID, name: self.writes[$0].record.recordName)] == $0 }
                .map { self.writes[$0] })
        for try await _ in try await connection.execute(statement, logger: logger) {}
        self.writes = []
        self.kept = []
    }
}
