import CloudCore
import CloudPostgres
import CloudRuntime
import Metrics
import Hummingbird

/// `records/modify`, `records/lookup` and `records/query`.
extension DatabaseController {
    @Sendable func modify(_ call: DatabaseCall) async throws -> WireWriter {
        let (zone, parsed, entryKeys) = try self.operations(in: call)
        var operations = parsed
        self.checkReceipts(in: &operations, database: call.database)
        let stamp = ChangeStamp(timestamp: self.clock.now, userRecordName: call.caller.userRecordName, deviceID: call.deviceID)
        let base = try self.writer(call)
        let owner = call.database.ownerRecordName
        let answer: @Sendable (ModifyResult) -> WireWriter = { result in
            Self.modifyAnswer(result, entryKeys: entryKeys, zone: zone, owner: owner, into: base)
        }
        let idempotency = call.idempotencyKey.map { key in
            IdempotentWrite(key: key.key, requestHash: key.requestHash) { result in
                let writer = answer(result)
                return StoredAnswer(status: Int(writer.status.code), body: writer.json.bytes)
            }
        }
        let person = try self.publicWriter(call, writing: operations.filter { !$0.type.isDelete }.count)
        let result = try await self.records.modify(
            operations, zoneName: zone, atomic: try call.body.bool("atomic"), in: call.database, stamp: stamp,
            idempotency: idempotency, check: try await self.writeCheck(operations, zone: zone, call), person: person?.userRecordName,
            logger: call.logger)
        if !result.atomicFailed {
            self.recordsWritten.increment(by: result.outcomes.filter { !$0.isFailure }.count)
            // A retried Idempotency-Key has no outcomes: what its first write did was followed up then.
            if let rules = self.writeRules {
                await rules.didWrite(
                    result.outcomes, to: call.database, zone: zone, container: call.container, environment: call.environment, logger: call.logger)
            }
        }
        if let stored = result.answer {
            var writer = WireWriter()
            writer.status = HTTPResponse.Status(code: stored.status)
            writer.json = JSONWriter(bytes: stored.body)
            return writer
        }
        return answer(result)
    }

    /// The sports layer's check for this batch, when it saves a record of a type the rules look at (or one whose
    /// type an update leaves unsaid).
    func writeCheck(_ operations: [RecordOperation], zone: String, _ call: DatabaseCall) async throws -> BatchCheck? {
        guard let rules = self.writeRules,
            operations.contains(where: { $0.refusal == nil && !$0.type.isDelete && ($0.recordType.map(rules.recordTypes.contains) ?? true) })
        else { return nil }
        return try await rules.check(
            operations, writesTo: call.database, zone: zone, container: call.container, environment: call.environment, logger: call.logger)
    }

    /// The batch's operations with their desired keys, and its one zone (the request's `zoneID`, else the records',
    /// all the same). An operation that cannot be read is kept as a refused one, so it fails alone as CloudKit answers
    /// a non-atomic batch; only a request-level problem (an unknown request zone) fails the whole request.
    func operations(in call: DatabaseCall) throws -> (zone: String, operations: [RecordOperation], keys: [[String]?]) {
        var zoneName = try call.body["zoneID"] == nil ? nil : self.zone(call.body, in: call)
        let desiredKeys = try call.body.desiredKeys()
        let entries = try call.body.entries("operations") { entry in
            if let record = try entry.object("record"), record["zoneID"] != nil {
                let recordZone = try self.zone(record, in: call)
                if let zoneName, zoneName != recordZone {
                    throw CloudError.badRequest(
                        "all operations of one request must be in one zone; \(record.name("zoneID")) names \(recordZone), not \(zoneName)")
                }
                zoneName = recordZone
            }
            return (operation: try RecordOperation(wire: entry), keys: try entry.desiredKeys() ?? desiredKeys)
        }
        guard let entries else { throw CloudError.badRequest("operations is required") }
        guard entries.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest(
                "a request may hold at most \(self.records.limits.maxOperations) operations; this one has \(entries.count): split it")
        }
        let operations = entries.map { raw, entry in
            switch entry {
            case .success(let parsed): parsed.operation
            case .failure(let error): RecordOperation.refused(raw["record"]?["recordName"]?.stringValue ?? "", error)
            }
        }
        return (zoneName ?? defaultZoneName, operations, entries.map { (try? $0.entry.get().keys) ?? desiredKeys })
    }

    /// The `records/modify` answer: each operation's saved record, tombstone or error, in request order.
    static func modifyAnswer(_ result: ModifyResult, entryKeys: [[String]?], zone: String, owner: String, into base: WireWriter) -> WireWriter {
        var writer = base
        writer.object { writer in
            if result.atomicFailed {
                // CloudKit JS builds its error from the top-level keys only: name the culprit there too.
                let culprit = result.outcomes.lazy.compactMap { outcome -> (String, CloudError)? in
                    guard case .failed(let name, let error, _) = outcome, error.code != .atomicError else { return nil }
                    return (name, error)
                }.first
                writer.json.key("serverErrorCode"); writer.json.string(ServerErrorCode.atomicError.rawValue)
                writer.json.key("reason")
                writer.json.string(
                    culprit.map { "record \($0.0) failed with \($0.1.code.rawValue) (\($0.1.reason)); the batch is atomic, so nothing was saved" }
                        ?? CloudError.atomicFailure.reason)
            }
            writer.list("records") { writer in
                for (keys, outcome) in zip(entryKeys, result.outcomes) {
                    switch outcome {
                    case .saved(let record):
                        writer.record(RecordSnapshot(record, desiredKeys: keys.map(Set.init)), zoneName: zone, owner: owner)
                    case .deleted(let name, _):
                        writer.deleted("recordName", name: name)
                    case .failed(let name, let error, let serverRecord):
                        writer.itemError(
                            error, key: "recordName", name: name, serverRecord: serverRecord.map { RecordSnapshot($0) }, zone: (zone, owner))
                    }
                }
            }
        }
        // A failed atomic batch is HTTP 400 with the per-record results (the culprit's real code, ATOMIC_ERROR for
        // the others), as CloudKit answers it.
        if result.atomicFailed { writer.status = .badRequest }
        return writer
    }

    @Sendable func lookup(_ call: DatabaseCall) async throws -> WireWriter {
        let zone = try self.zone(call.body, in: call)
        let desiredKeys = try call.body.desiredKeys()
        // Each entry's own `desiredKeys` overrides the request's (Apple documents both); a malformed entry fails alone.
        let entries = try call.body.entries("records") { entry in
            guard let name = try entry.string("recordName") else { throw CloudError.badRequest("\(entry.name("recordName")) is required") }
            return (name: name, desiredKeys: try entry.desiredKeys() ?? desiredKeys)
        }
        guard let entries else { throw CloudError.badRequest("records is required") }
        guard entries.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("a lookup may name at most \(self.records.limits.maxOperations) records")
        }
        let found = try await self.records.lookup(readable(entries), zoneName: zone, in: call.database, logger: call.logger)
        let unreadable = found.contains { $0 != nil } ? try await self.unreadableTypes(call) : []
        var writer = try self.writer(call)
        writer.object { writer in
            writer.list("records") { writer in
                for (raw, answer) in answered(entries, found) {
                    switch answer {
                    case .failure(let error):
                        writer.itemError(error, key: "recordName", name: raw["recordName"]?.stringValue ?? "")
                    case .success((_, let record?)) where unreadable.contains(record.recordType):
                        writer.itemError(
                            CloudError(.authenticationRequired, "sign in to read \(record.recordType) records"), key: "recordName",
                            name: record.recordName)
                    case .success((_, let record?)):
                        writer.record(record, zoneName: zone, owner: call.database.ownerRecordName)
                    case .success((let entry, nil)):
                        writer.itemError(.notFound("record \(entry.name) does not exist"), key: "recordName", name: entry.name)
                    }
                }
            }
        }
        return writer
    }

    @Sendable func query(_ call: DatabaseCall) async throws -> WireWriter {
        guard let queryObject = try call.body.object("query") else { throw CloudError.badRequest("query is required") }
        let query = try RecordQuery(wire: queryObject)
        let zoneWide = try call.body["zoneID"] == nil && (call.body.bool("zoneWide") ?? false)
        let zone = try self.zone(call.body, in: call)
        let desiredKeys = try call.body.desiredKeys()
        // A marker is valid only for the same query, zone and keys, in the same database.
        let queryHash = ContinuationMarker.hash(
            of: JSONWriter.encode(
                .object([
                    "database": .int(call.database.id), "query": .object(queryObject.values), "zone": .string(zoneWide ? "*" : zone),
                    "keys": desiredKeys.map { .array($0.map(JSONValue.string)) } ?? .null,
                ])))
        if try await self.unreadableTypes(call).contains(query.recordType) {
            throw CloudError(.authenticationRequired, "sign in to read \(query.recordType) records")
        }
        var offset: Int64 = 0
        if let marker = try call.body.string("continuationMarker") {
            offset = try ContinuationMarker.decode(marker, queryHash: queryHash, with: self.records.signer).offset
        }
        let page = try await self.records.query(
            query, zoneName: zoneWide ? nil : zone, offset: offset, limit: try call.body.int("resultsLimit"),
            desiredKeys: desiredKeys, storedAnswers: true, in: call.database, logger: call.logger)
        var writer = try self.writer(call)
        writer.object { writer in
            writer.list("records") { writer in
                for (record, zoneName) in zip(page.records, page.zoneNames) {
                    writer.record(record, zoneName: zoneName, owner: call.database.ownerRecordName)
                }
            }
            if let next = page.nextOffset {
                writer.json.key("continuationMarker")
                writer.json.string(ContinuationMarker(queryHash: queryHash, offset: next).encode(with: self.records.signer))
            }
        }
        return writer
    }
}
