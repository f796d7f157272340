import Foundation

/// The `operationType`s of `records/modify`.
public enum OperationType: String, Sendable, CaseIterable {
    case create, update, forceUpdate, replace, forceReplace, delete, forceDelete

    var checksChangeTag: Bool { self == .update || self == .replace || self == .delete }
    public var isDelete: Bool { self == .delete || self == .forceDelete }
}

/// One operation of a `records/modify` request, structurally validated; field values are checked by the planner,
/// which knows the record's existing field types.
public struct RecordOperation: Sendable {
    public var type: OperationType
    public var recordName: String
    public var recordType: String?
    public var changeTag: String?
    /// Wire `RecordField`s by name; `nil` when the operation carries no `fields`.
    public var fields: [String: JSONValue]?
    /// Why the operation was refused before planning (malformed on the wire, a bad asset receipt): the plan answers it
    /// with this error, so it fails alone in a non-atomic batch instead of failing the request.
    public var refusal: CloudError?

    public init(type: OperationType, recordName: String, recordType: String? = nil, changeTag: String? = nil, fields: [String: JSONValue]? = nil) {
        self.type = type
        self.recordName = recordName
        self.recordType = recordType
        self.changeTag = changeTag
        self.fields = fields
    }

    /// An operation that could not be read; `recordName` is what could be read of it (possibly empty).
    public static func refused(_ recordName: String, _ error: CloudError) -> RecordOperation {
        var operation = RecordOperation(type: .forceUpdate, recordName: recordName)
        operation.refusal = error
        return operation
    }
}

/// What happened to one operation.
public enum OperationOutcome: Sendable {
    case saved(Record)
    case deleted(recordName: String, recordType: String)
    /// A per-record failure; `serverRecord` is the current record for CONFLICT and EXISTS (our extension).
    case failed(recordName: String, error: CloudError, serverRecord: Record?)

    public var isFailure: Bool {
        if case .failed = self { return true }
        return false
    }
}

/// Decides the outcome of a batch of record operations against the current records: optimistic concurrency,
/// create/update/replace/delete semantics and limits. Pure: the store loads `existing` and writes `writes`.
///
/// Every refusal is per operation, as CloudKit answers a non-atomic batch: a malformed operation (bad field, missing
/// change tag, over the size limit, named twice) fails alone with BAD_REQUEST; the store fails the rest of an atomic
/// batch with ATOMIC_ERROR.
public struct ModificationPlan: Sendable {
    public var outcomes: [OperationOutcome]
    /// New record versions (including tombstones) to store, in sequence order.
    public var writes: [Record]
    /// The names `writes` inserts by `create`: stored only where the name is free or a tombstone.
    public var creates: Set<String> = []
    /// The last change sequence number used (the first was `firstSeq`).
    public var lastSeq: Int64

    /// - Parameters:
    ///   - existing: current rows (live or tombstones) for the operations' record names.
    ///   - firstSeq: the sequence number for the first write.
    ///   - maxRecordBytes: the per-record size limit for its fields' JSON.
    ///   - schema: when given, every saved record must match it (declared type and fields, right types), and
    ///     values sent without a `type` take the declared one.
    public init(
        operations: [RecordOperation], existing: [String: Record], firstSeq: Int64, stamp: ChangeStamp,
        maxRecordBytes: Int, schema: Schema? = nil, scope: DatabaseScope = .private
    ) {
        let rules = FieldRules(maxRecordBytes: maxRecordBytes, schema: schema, scope: scope)
        var seq = firstSeq - 1
        self.outcomes = []
        self.writes = []
        self.outcomes.reserveCapacity(operations.count)
        var seen = Set<String>()
        for (index, operation) in operations.enumerated() {
            let path = "operations[\(index)]"
            do {
                if let refusal = operation.refusal { throw refusal }
                guard seen.insert(operation.recordName).inserted else {
                    throw CloudError.badRequest("\(path): record \(operation.recordName) appears more than once in this request")
                }
                switch try Self.decide(operation, existing: existing, stamp: stamp, rules: rules, path: path) {
                case .outcome(let outcome):
                    self.outcomes.append(outcome)
                case .write(var record):
                    seq += 1
                    record.changeSeq = seq
                    self.writes.append(record)
                    if operation.type == .create { self.creates.insert(record.recordName) }
                    self.outcomes.append(record.deleted ? .deleted(recordName: record.recordName, recordType: record.recordType) : .saved(record))
                }
            } catch {
                let refusal = error as? CloudError ?? .badRequest("\(path): \(error)")
                self.outcomes.append(.failed(recordName: operation.recordName, error: refusal, serverRecord: nil))
            }
        }
        self.lastSeq = seq
    }

    /// Fails a record this plan would save (a check that needs the database, such as a missing reference target or
    /// asset): its outcome becomes `error` and its version is not written.
    public mutating func fail(_ recordName: String, _ error: CloudError) {
        guard let index = self.outcomes.firstIndex(where: { if case .saved(let record) = $0 { record.recordName == recordName } else { false } })
        else { return }
        self.outcomes[index] = .failed(recordName: recordName, error: error, serverRecord: nil)
        self.writes.removeAll { $0.recordName == recordName }
        self.creates.remove(recordName)
    }

    /// One operation's result: an outcome without a write, or a new version to store (its sequence number set later).
    enum Decision {
        case outcome(OperationOutcome)
        case write(Record)
    }

    /// The `records/modify` rule table (CloudKit's operation types against the stored row) in one place, where it can
    /// be read against the reference. Throws for a malformed operation; its field errors win over EXISTS and CONFLICT.
    static func decide(_ operation: RecordOperation, existing: [String: Record], stamp: ChangeStamp, rules: FieldRules, path: String) throws
        -> Decision
    {
        let current = existing[operation.recordName].flatMap { $0.deleted ? nil : $0 }
        if operation.type.checksChangeTag, operation.changeTag == nil {
            throw CloudError.badRequest("\(path).record.recordChangeTag is required for \(operation.type.rawValue)")
        }
        if let current, let type = operation.recordType, type != current.recordType {
            throw CloudError.badRequest(
                "\(path).record.recordType \(type) differs from the stored \(current.recordType); a record's type cannot change")
        }
        // Per-record outcomes: existence and optimistic concurrency.
        if operation.type == .create, let current {
            _ = try rules.fields(of: operation, recordType: operation.recordType ?? current.recordType, base: nil, path: path)
            return .outcome(
                .failed(recordName: operation.recordName, error: CloudError(.exists, "record to insert already exists"), serverRecord: current))
        }
        if operation.type.checksChangeTag || operation.type == .forceDelete {
            guard let current else {
                if operation.type == .forceDelete, let tombstone = existing[operation.recordName] {
                    return .outcome(.deleted(recordName: operation.recordName, recordType: tombstone.recordType))
                }
                return .outcome(
                    .failed(recordName: operation.recordName, error: .notFound("record \(operation.recordName) does not exist"), serverRecord: nil))
            }
            if operation.type.checksChangeTag, operation.changeTag != current.changeTag {
                _ = try rules.fields(of: operation, recordType: current.recordType, base: current, path: path)
                return .outcome(
                    .failed(
                        recordName: operation.recordName, error: CloudError(.conflict, "client oplock error updating record"), serverRecord: current))
            }
        }
        if operation.type.isDelete, var tombstone = current {
            tombstone.deleted = true
            tombstone.fields = [:]
            tombstone.modified = stamp
            return .write(tombstone)
        }
        guard let recordType = operation.recordType ?? current?.recordType, !recordType.isEmpty else {
            throw CloudError.badRequest("\(path).record.recordType is required to create record \(operation.recordName)")
        }
        let keepsFields = operation.type == .update || operation.type == .forceUpdate
        let fields = try rules.fields(of: operation, recordType: recordType, base: keepsFields ? current : nil, path: path)
        let record = Record(
            recordName: operation.recordName, recordType: recordType, changeSeq: 0, fields: fields,
            created: current?.created ?? stamp, modified: stamp)
        try rules.checkSize(of: record, path: path)
        return .write(record)
    }
}

/// How an operation's wire fields become a record's fields: types, size limit and schema.
struct FieldRules {
    /// Fields per record: far above any real record type, low enough that one record cannot become a hash-flood.
    static let maxFields = 256
    var maxRecordBytes: Int
    var schema: Schema?
    var scope: DatabaseScope

    /// The record's fields after the operation: `base` fields overlaid with the operation's (null removes).
    func fields(of operation: RecordOperation, recordType: String?, base: Record?, path: String) throws -> [String: FieldValue] {
        var fields = base?.fields ?? [:]
        for (name, raw) in operation.fields ?? [:] {
            try FieldName.validate(name, path: "\(path).record.fields")
            let hint = fields[name]?.type ?? recordType.flatMap { self.schema?.fieldType(name, of: $0) }
            if let value = try FieldValue.parse(raw, hint: hint, path: "\(path).record.fields.\(name)") {
                fields[name] = value
            } else {
                fields[name] = nil
            }
        }
        guard fields.count <= FieldRules.maxFields else {
            throw CloudError.badRequest(
                "\(path): record \(operation.recordName) has \(fields.count) fields; the limit is \(FieldRules.maxFields) fields per record")
        }
        if let schema = self.schema, let recordType {
            try schema.validate(recordType: recordType, fields: fields, in: self.scope, path: path)
        }
        return fields
    }

    /// The per-record size limit, on the fields' JSON text.
    func checkSize(of record: Record, path: String) throws {
        let size = record.encodedFields.utf8.count
        if size > self.maxRecordBytes {
            throw CloudError.badRequest(
                "\(path): record \(record.recordName) is \(size) bytes; the limit is \(self.maxRecordBytes) bytes per record (assets excluded)")
        }
    }
}

/// Rules for record, field, type and zone names.
public enum FieldName {
    public static let maxLength = 255

    public static func validate(_ name: String, path: String, what: String = "field name") throws {
        guard !name.isEmpty, name.utf8.count <= maxLength else {
            throw CloudError.badRequest("\(path): \(what) must be 1 to \(maxLength) bytes")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw CloudError.badRequest("\(path): \(what) \(name.debugDescription) contains control characters")
        }
    }
}
