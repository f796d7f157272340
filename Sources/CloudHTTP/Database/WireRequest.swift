import CloudCore
import Foundation

/// A JSON object from a request body with typed accessors whose errors name the offending key.
struct WireObject {
    let values: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws {
        guard case .object(let values) = value else {
            throw CloudError.badRequest("\(path.isEmpty ? "request body" : path) must be a JSON object")
        }
        self.values = values
        self.path = path
    }

    func name(_ key: String) -> String { self.path.isEmpty ? key : "\(self.path).\(key)" }

    /// The value of `key`, treating JSON null as absent.
    subscript(key: String) -> JSONValue? {
        guard let value = self.values[key], !value.isNull else { return nil }
        return value
    }

    func string(_ key: String) throws -> String? {
        guard let value = self[key] else { return nil }
        guard let text = value.stringValue else { throw CloudError.badRequest("\(self.name(key)) must be a string") }
        return text
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = self[key] else { return nil }
        guard let flag = value.boolValue else { throw CloudError.badRequest("\(self.name(key)) must be true or false") }
        return flag
    }

    func int(_ key: String) throws -> Int? {
        guard let value = self[key] else { return nil }
        guard let number = value.int64Value, let int = Int(exactly: number) else {
            throw CloudError.badRequest("\(self.name(key)) must be an integer")
        }
        return int
    }

    func array(_ key: String) throws -> [JSONValue]? {
        guard let value = self[key] else { return nil }
        guard let items = value.arrayValue else { throw CloudError.badRequest("\(self.name(key)) must be a list") }
        return items
    }

    func object(_ key: String) throws -> WireObject? {
        guard let value = self[key] else { return nil }
        return try WireObject(value, path: self.name(key))
    }

    /// A list of objects, each with its own path (`operations[3]`).
    func objects(_ key: String) throws -> [WireObject]? {
        try self.array(key)?.enumerated().map { try WireObject($1, path: "\(self.name(key))[\($0)]") }
    }

    /// Each entry of the list `key`, read by `read`; an entry that cannot be read keeps its refusal, so that it fails
    /// alone as a per-item error (CloudKit's rule: only a request that cannot be read at all is refused whole).
    func entries<T>(_ key: String, read: (WireObject) throws -> T) throws -> [(raw: JSONValue, entry: Result<T, CloudError>)]? {
        try self.array(key)?.enumerated().map { index, raw in
            do {
                return (raw, .success(try read(WireObject(raw, path: "\(self.name(key))[\(index)]"))))
            } catch {
                return (raw, .failure(error as? CloudError ?? .badRequest("\(self.name(key))[\(index)] cannot be read")))
            }
        }
    }

    func strings(_ key: String) throws -> [String]? {
        try self.array(key)?.map { item in
            guard let text = item.stringValue else { throw CloudError.badRequest("\(self.name(key)) must be a list of strings") }
            return text
        }
    }

    /// `desiredKeys`: null/absent → every field; a list → only those (an empty list → system fields only).
    func desiredKeys() throws -> [String]? { try self.strings("desiredKeys") }

    /// The zone named by `zoneID` (`zoneName`, owner as `ownerRecordName` or MistKit's `ownerName`), default zone when absent.
    func zoneName() throws -> (name: String, owner: String?) {
        guard let zone = try self.object("zoneID") else { return (defaultZoneName, nil) }
        let name = try zone.string("zoneName") ?? defaultZoneName
        try FieldName.validate(name, path: zone.name("zoneName"), what: "zone name")
        return (name, try zone.string("ownerRecordName") ?? zone.string("ownerName"))
    }
}

/// What `WireObject.entries` could read, in order: what the store is asked about.
func readable<Entry>(_ entries: [(raw: JSONValue, entry: Result<Entry, CloudError>)]) -> [Entry] {
    entries.compactMap { try? $0.entry.get() }
}

/// The store's answers to `readable(entries)` (one each, in order) put back beside every entry, in request order; an
/// entry that could not be read keeps its refusal.
func answered<Entry, Answer>(_ entries: [(raw: JSONValue, entry: Result<Entry, CloudError>)], _ answers: [Answer]) -> [(
    raw: JSONValue, answer: Result<(entry: Entry, answer: Answer), CloudError>
)] {
    var answers = answers.makeIterator()
    return entries.map { raw, entry in (raw, entry.map { ($0, answers.next()!) }) }
}

extension RecordOperation {
    /// Parses one `records/modify` operation.
    init(wire operation: WireObject) throws {
        guard let typeName = try operation.string("operationType") else {
            throw CloudError.badRequest("\(operation.name("operationType")) is required")
        }
        guard let type = OperationType(rawValue: typeName) else {
            throw CloudError.badRequest(
                "\(operation.name("operationType")) \(typeName.debugDescription) is not one of \(OperationType.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        guard let record = try operation.object("record") else { throw CloudError.badRequest("\(operation.name("record")) is required") }
        let recordName: String
        if let name = try record.string("recordName") {
            try FieldName.validate(name, path: record.name("recordName"), what: "record name")
            recordName = name
        } else if type == .create {
            recordName = UUID().uuidString
        } else {
            throw CloudError.badRequest("\(record.name("recordName")) is required for \(typeName)")
        }
        let recordType = try record.string("recordType")
        if let recordType { try FieldName.validate(recordType, path: record.name("recordType"), what: "record type") }
        var fields: [String: JSONValue]?
        if let raw = record["fields"] {
            guard case .object(let object) = raw else { throw CloudError.badRequest("\(record.name("fields")) must be an object") }
            fields = object
        }
        self.init(type: type, recordName: recordName, recordType: recordType, changeTag: try record.string("recordChangeTag"), fields: fields)
    }
}

extension RecordQuery {
    /// Parses the `query` dictionary of `records/query`.
    init(wire query: WireObject) throws {
        guard let recordType = try query.string("recordType"), !recordType.isEmpty else {
            throw CloudError.badRequest("\(query.name("recordType")) is required")
        }
        let filters = try (query.objects("filterBy") ?? []).map { filter -> QueryFilter in
            guard let comparatorName = try filter.string("comparator") else {
                throw CloudError.badRequest("\(filter.name("comparator")) is required")
            }
            guard let comparator = Comparator(rawValue: comparatorName) else {
                throw CloudError.badRequest(
                    "\(filter.name("comparator")) \(comparatorName) is not supported; use one of \(Comparator.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            guard let rawValue = filter["fieldValue"],
                let value = try FieldValue.parse(rawValue, path: filter.name("fieldValue"))
            else { throw CloudError.badRequest("\(filter.name("fieldValue")) needs a value") }
            var distance: Double?
            if let raw = filter["distance"] {
                guard let meters = raw.doubleValue, meters >= 0 else {
                    throw CloudError.badRequest("\(filter.name("distance")) must be a number of metres")
                }
                distance = meters
            }
            return QueryFilter(comparator: comparator, target: try Self.target(filter), value: value, distance: distance)
        }
        let sorts = try (query.objects("sortBy") ?? []).map { sort -> QuerySort in
            var relativeLocation: (latitude: Double, longitude: Double)?
            if let raw = sort["relativeLocation"] {
                guard let location = try FieldValue.parse(raw, hint: .location, path: sort.name("relativeLocation")),
                    location.type == .location, let latitude = location.value["latitude"]?.doubleValue,
                    let longitude = location.value["longitude"]?.doubleValue
                else { throw CloudError.badRequest("\(sort.name("relativeLocation")) must be a LOCATION") }
                relativeLocation = (latitude, longitude)
            }
            return QuerySort(target: try Self.target(sort), ascending: try sort.bool("ascending") ?? true, relativeLocation: relativeLocation)
        }
        self.init(recordType: recordType, filters: filters, sorts: sorts)
    }

    /// CloudKit's internal names for system fields, which some clients use as `fieldName`.
    static let internalSystemNames: [String: SystemField] = [
        "___recordId": .recordName, "___createTime": .createdTimestamp, "___modTime": .modifiedTimestamp,
        "___createdBy": .createdUserRecordName, "___modifiedBy": .modifiedUserRecordName,
    ]

    static func target(_ entry: WireObject) throws -> QueryTarget {
        if let system = try entry.string("systemFieldName") {
            guard let field = SystemField(rawValue: system) ?? internalSystemNames[system] else {
                throw CloudError.badRequest(
                    "\(entry.name("systemFieldName")) \(system) is not one of \(SystemField.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return .system(field)
        }
        guard let name = try entry.string("fieldName") else {
            throw CloudError.badRequest("\(entry.path) needs a fieldName or systemFieldName")
        }
        if let field = internalSystemNames[name] { return .system(field) }
        try FieldName.validate(name, path: entry.name("fieldName"))
        return .field(name)
    }
}
