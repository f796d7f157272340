/// The CloudKit Web Services field type tags. Assets are stored and answered as `ASSETID`.
public enum FieldType: String, Sendable, CaseIterable {
    case string = "STRING"
    case int64 = "INT64"
    case double = "DOUBLE"
    case timestamp = "TIMESTAMP"
    case bytes = "BYTES"
    case reference = "REFERENCE"
    case asset = "ASSETID"
    case location = "LOCATION"
    case stringList = "STRING_LIST"
    case int64List = "INT64_LIST"
    case doubleList = "DOUBLE_LIST"
    case timestampList = "TIMESTAMP_LIST"
    case bytesList = "BYTES_LIST"
    case referenceList = "REFERENCE_LIST"
    case assetList = "ASSETID_LIST"
    case locationList = "LOCATION_LIST"

    /// Parses a wire tag; `ASSET` (request spelling) maps to `ASSETID`.
    public init?(tag: String) {
        switch tag {
        case "ASSET": self = .asset
        case "ASSET_LIST": self = .assetList
        default: self.init(rawValue: tag)
        }
    }

    /// The element type of a list type, `nil` for scalars.
    public var elementType: FieldType? {
        switch self {
        case .stringList: .string
        case .int64List: .int64
        case .doubleList: .double
        case .timestampList: .timestamp
        case .bytesList: .bytes
        case .referenceList: .reference
        case .assetList: .asset
        case .locationList: .location
        default: nil
        }
    }

    /// The list type whose elements have this type.
    public var listType: FieldType? { FieldType.allCases.first { $0.elementType == self } }

    public var isNumeric: Bool { self == .int64 || self == .double || self == .timestamp }
}

/// A field's value, validated and normalized to the one stored and answered shape `{"type": T, "value": V}`.
public struct FieldValue: Sendable, Hashable {
    public let type: FieldType
    public let value: JSONValue

    /// The wire and storage form.
    public var json: JSONValue { .object(["type": .string(self.type.rawValue), "value": self.value]) }

    /// Validates a wire `RecordField` (`{"value": …, "type"?: …}`). `hint` is the type the field already has,
    /// used when the client sends no `type` (MistKit never does). Returns `nil` for "set to null" (`{}` or a null value).
    public static func parse(_ field: JSONValue, hint: FieldType? = nil, path: String) throws -> FieldValue? {
        guard case .object(let dictionary) = field else {
            throw CloudError.badRequest("\(path) must be an object like {\"value\": …, \"type\": …}")
        }
        let raw = dictionary["value"] ?? .null
        var type: FieldType?
        if let tag = dictionary["type"], !tag.isNull {
            guard let text = tag.stringValue, let parsed = FieldType(tag: text) else {
                throw CloudError.badRequest("\(path).type: unknown field type \(JSONWriter.encode(tag))")
            }
            type = parsed
        }
        if raw.isNull { return nil }
        guard let resolved = type ?? hint ?? Self.inferType(of: raw) else {
            if case .array = raw {
                throw CloudError.badRequest("\(path): cannot use an empty list to initialize a new field; give a \"type\"")
            }
            throw CloudError.badRequest("\(path): cannot infer the field type of \(JSONWriter.encode(raw)); give a \"type\"")
        }
        return FieldValue(type: resolved, value: try Self.normalize(raw, as: resolved, path: path + ".value"))
    }

    public init(type: FieldType, value: JSONValue) {
        self.type = type
        self.value = value
    }

    /// The checksums of the ASSETID values among `fields`: the bytes a record needs.
    public static func assetChecksums(in fields: [String: FieldValue]) -> [String] {
        fields.values.flatMap { field -> [String] in
            switch field.type {
            case .asset: [field.value["fileChecksum"]?.stringValue].compactMap { $0 }
            case .assetList: field.value.arrayValue?.compactMap { $0["fileChecksum"]?.stringValue } ?? []
            default: []
            }
        }
    }

    /// Reads a stored `{"type","value"}` object back (trusted: it was normalized on write).
    public init?(stored: JSONValue) {
        guard let tag = stored["type"]?.stringValue, let type = FieldType(tag: tag), let value = stored["value"] else {
            return nil
        }
        self.init(type: type, value: value)
    }

    /// The type a value's JSON shape implies when the client gave none.
    static func inferType(of raw: JSONValue) -> FieldType? {
        switch raw {
        case .string: return .string
        case .int, .bool: return .int64
        case .double: return .double
        case .object(let object):
            if object["recordName"] != nil { return .reference }
            if object["latitude"] != nil || object["longitude"] != nil { return .location }
            if object["fileChecksum"] != nil || object["receipt"] != nil { return .asset }
            return nil
        case .array(let items):
            guard let first = items.first, let element = inferType(of: first) else { return nil }
            return element.listType
        case .null: return nil
        }
    }

    /// A wire value as stored, checked against its type. Long because it is one case per CloudKit field type, with the
    /// leniency real clients need next to each.
    static func normalize(_ raw: JSONValue, as type: FieldType, path: String) throws -> JSONValue {
        if let element = type.elementType {
            guard case .array(let items) = raw else { throw CloudError.badRequest("\(path) must be a list for \(type.rawValue)") }
            return .array(try items.enumerated().map { try normalize($1, as: element, path: "\(path)[\($0)]") })
        }
        func fail(_ expected: String) -> CloudError {
            CloudError.badRequest("\(path) must be \(expected) for \(type.rawValue), got \(JSONWriter.encode(raw).prefix(80))")
        }
        switch type {
        case .string:
            guard let text = raw.stringValue else { throw fail("a string") }
            return .string(text)
        case .int64:
            if case .bool(let flag) = raw { return .int(flag ? 1 : 0) }
            guard let number = raw.int64Value else { throw fail("an integer") }
            return .int(number)
        case .timestamp:
            // Int64(exactly:) is nil for NaN, infinities and values past Int64's range, which would trap.
            guard let number = raw.int64Value ?? raw.doubleValue.flatMap({ Int64(exactly: $0.rounded(.towardZero)) }) else {
                throw fail("milliseconds since 1970")
            }
            return .int(number)
        case .double:
            guard let number = raw.doubleValue, number.isFinite else { throw fail("a finite number") }
            return .double(number)
        case .bytes:
            guard let text = raw.stringValue, Base64.isValid(text) else { throw fail("a base64 string") }
            return .string(text)
        case .reference:
            return try Reference(json: raw, path: path).json
        case .location:
            guard case .object(let object) = raw,
                let latitude = object["latitude"]?.doubleValue, let longitude = object["longitude"]?.doubleValue,
                (-90...90).contains(latitude), (-180...180).contains(longitude)
            else { throw fail("{latitude: -90…90, longitude: -180…180}") }
            var normalized: [String: JSONValue] = ["latitude": .double(latitude), "longitude": .double(longitude)]
            for key in ["horizontalAccuracy", "verticalAccuracy", "altitude", "speed", "course"] {
                if let value = object[key], !value.isNull {
                    guard let number = value.doubleValue else { throw fail("numbers in \(key)") }
                    normalized[key] = .double(number)
                }
            }
            if let value = object["timestamp"], !value.isNull {
                guard let number = value.int64Value else { throw fail("milliseconds in timestamp") }
                normalized["timestamp"] = .int(number)
            }
            return .object(normalized)
        case .asset:
            guard case .object(let object) = raw, object["fileChecksum"]?.stringValue != nil else {
                throw fail("an asset dictionary with fileChecksum")
            }
            var normalized: [String: JSONValue] = [:]
            // The receipt proves the upload when saving; downloadURL is made per read. Neither is stored.
            for key in ["fileChecksum", "referenceChecksum", "wrappingKey"] {
                if let value = object[key]?.stringValue { normalized[key] = .string(value) }
            }
            if let size = object["size"]?.int64Value { normalized["size"] = .int(size) }
            return .object(normalized)
        default:
            throw fail("a scalar")
        }
    }
}

/// A `REFERENCE` value: a record name in the same zone and what happens when the target goes.
public struct Reference: Sendable, Hashable {
    public enum Action: String, Sendable {
        case none = "NONE"
        case deleteSelf = "DELETE_SELF"
        case validate = "VALIDATE"
    }
    public var recordName: String
    public var action: Action

    public init(recordName: String, action: Action = .none) {
        self.recordName = recordName
        self.action = action
    }

    init(json: JSONValue, path: String) throws {
        guard let name = json["recordName"]?.stringValue, !name.isEmpty else {
            throw CloudError.badRequest("\(path).recordName is required for a REFERENCE")
        }
        var action = Action.none
        if let tag = json["action"], !tag.isNull {
            guard let text = tag.stringValue, let parsed = Action(rawValue: text) else {
                throw CloudError.badRequest("\(path).action must be NONE, DELETE_SELF or VALIDATE")
            }
            action = parsed
        }
        self.init(recordName: name, action: action)
    }

    public var json: JSONValue { .object(["recordName": .string(self.recordName), "action": .string(self.action.rawValue)]) }

    /// Every reference held by a set of fields, scalar or in a list.
    public static func all(in fields: [String: FieldValue]) -> [Reference] {
        fields.values.flatMap { field -> [Reference] in
            switch field.type {
            case .reference: return (try? Reference(json: field.value, path: "")).map { [$0] } ?? []
            case .referenceList: return field.value.arrayValue?.compactMap { try? Reference(json: $0, path: "") } ?? []
            default: return []
            }
        }
    }
}

enum Base64 {
    /// Standard or URL-safe base64, padding optional.
    static func isValid(_ text: String) -> Bool {
        text.utf8.allSatisfy { byte in
            (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte)
                || byte == 43 || byte == 47 || byte == 61 || byte == 45 || byte == 95
        } && text.utf8.count % 4 != 1
    }
}
