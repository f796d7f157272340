/// Who owns a field, which decides what a merge of canonical data may do with it.
public enum FieldOwner: String, Sendable, Codable {
    /// Set once when the record is created (canonical ids); a source that changes it is refused.
    case immutable
    /// Owned by the canonical source: updated by every import.
    case system
    /// Owned by the person: never overwritten by canonical data.
    case user
}

/// One declared field.
public struct FieldSchema: Sendable, Hashable, Codable {
    public var type: String
    public var owner: FieldOwner
    public var queryable: Bool
    public var sortable: Bool
    /// Word search (`CONTAINS_ALL_TOKENS`, `CONTAINS_ANY_TOKENS`) on a STRING field, with a full-text index.
    public var searchable: Bool

    public init(type: FieldType, owner: FieldOwner = .system, queryable: Bool = false, sortable: Bool = false, searchable: Bool = false) {
        self.type = type.rawValue
        self.owner = owner
        self.queryable = queryable
        self.sortable = sortable
        self.searchable = searchable
    }

    public var fieldType: FieldType? { FieldType(tag: self.type) }

    enum CodingKeys: String, CodingKey { case type, owner, queryable, sortable, searchable }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.type = try container.decode(String.self, forKey: .type)
        self.owner = try container.decodeIfPresent(FieldOwner.self, forKey: .owner) ?? .system
        self.queryable = try container.decodeIfPresent(Bool.self, forKey: .queryable) ?? false
        self.sortable = try container.decodeIfPresent(Bool.self, forKey: .sortable) ?? false
        self.searchable = try container.decodeIfPresent(Bool.self, forKey: .searchable) ?? false
    }

    /// Left out when false, so schema documents and stored versions keep their shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(self.type, forKey: .type)
        try container.encode(self.owner, forKey: .owner)
        if self.queryable { try container.encode(true, forKey: .queryable) }
        if self.sortable { try container.encode(true, forKey: .sortable) }
        if self.searchable { try container.encode(true, forKey: .searchable) }
    }
}

/// A security role of the public database, as CloudKit's: who a permission is granted to.
public enum PublicRole: String, Sendable, Codable {
    /// Anyone with the container's API token, signed in or not.
    case world
    /// A signed-in person.
    case authenticated
    /// The signed-in person who created the record.
    case creator
    /// Only operators (server-to-server keys): the canonical data.
    case `operator`
}

/// Who may read, create and change (update, delete) the records of one public record type. A type without
/// permissions is the operators' (canonical data): world-readable, written only with a server-to-server key.
public struct RecordTypePermissions: Sendable, Hashable, Codable {
    public var read: PublicRole
    public var create: PublicRole
    public var write: PublicRole

    public init(read: PublicRole = .world, create: PublicRole = .operator, write: PublicRole = .operator) {
        (self.read, self.create, self.write) = (read, create, write)
    }

    /// The canonical types' permissions.
    public static let operators = RecordTypePermissions()

    enum CodingKeys: String, CodingKey { case read, create, write }

    /// A permission left out keeps its default (world reads, operators write).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.read = try container.decodeIfPresent(PublicRole.self, forKey: .read) ?? .world
        self.create = try container.decodeIfPresent(PublicRole.self, forKey: .create) ?? .operator
        self.write = try container.decodeIfPresent(PublicRole.self, forKey: .write) ?? .operator
    }
}

/// One declared record type: the database it lives in, its fields and, in the public database, who may do what.
public struct RecordTypeSchema: Sendable, Hashable, Codable {
    public var database: String
    public var fields: [String: FieldSchema]
    public var permissions: RecordTypePermissions?

    public init(database: DatabaseScope, fields: [String: FieldSchema], permissions: RecordTypePermissions? = nil) {
        self.database = database.rawValue
        self.fields = fields
        self.permissions = permissions
    }
}

/// Where a schema is in force: one container's `development` or `production` environment, as in CloudKit.
public struct SchemaScope: Sendable, Hashable, CustomStringConvertible {
    public var container: String
    public var environment: String

    public init(container: String, environment: String) {
        self.container = container
        self.environment = environment
    }

    public static let environments = ["development", "production"]
    /// Development grows its schema just in time; production changes only by `schema deploy`.
    public var isDevelopment: Bool { self.environment == "development" }
    public var description: String { "\(self.container) (\(self.environment))" }
}

/// The declared record types of one container and environment. Writes are validated against it once one is
/// deployed (`stadiumcloud schema apply`); in development a write may also extend it (`additions`).
public struct Schema: Sendable, Hashable, Codable {
    public var recordTypes: [String: RecordTypeSchema]

    public init(recordTypes: [String: RecordTypeSchema]) { self.recordTypes = recordTypes }

    /// The record types whose permissions say `read: authenticated`: never shown to someone not signed in, nor in
    /// anything every device may get (a snapshot, a cached answer).
    public var readableOnlySignedIn: Set<String> {
        Set(self.recordTypes.filter { $0.value.permissions?.read == .authenticated }.keys)
    }

    /// Parses and checks a schema document (`Resources/schema.json`).
    public static func parse(_ bytes: some Collection<UInt8>) throws -> Schema {
        let schema: Schema
        do {
            schema = try JSONDecoder().decode(Schema.self, from: Data(bytes))
        } catch {
            throw CloudError.badRequest("schema is not valid: \(error)")
        }
        for (typeName, recordType) in schema.recordTypes {
            try FieldName.validate(typeName, path: "schema", what: "record type")
            guard DatabaseScope(rawValue: recordType.database) != nil else {
                throw CloudError.badRequest("schema: \(typeName).database must be public or private")
            }
            if let permissions = recordType.permissions {
                guard recordType.database == DatabaseScope.public.rawValue else {
                    throw CloudError.badRequest("schema: \(typeName).permissions apply to public record types only")
                }
                guard [.world, .authenticated].contains(permissions.read), [.operator, .authenticated].contains(permissions.create),
                    [.operator, .creator].contains(permissions.write)
                else {
                    throw CloudError.badRequest(
                        "schema: \(typeName).permissions: read is world or authenticated, create operator or authenticated, write operator or creator"
                    )
                }
            }
            for (fieldName, field) in recordType.fields {
                try FieldName.validate(fieldName, path: "schema.\(typeName)")
                guard field.fieldType != nil else {
                    throw CloudError.badRequest("schema: \(typeName).\(fieldName) has unknown type \(field.type)")
                }
                guard !field.searchable || field.fieldType == .string else {
                    throw CloudError.badRequest("schema: \(typeName).\(fieldName) is searchable, which only a STRING field can be")
                }
            }
        }
        return schema
    }

    /// Checks a write: the type is declared for this database and every field is declared with its type.
    public func validate(recordType: String, fields: [String: FieldValue], in database: DatabaseScope, path: String) throws {
        guard let declared = self.recordTypes[recordType], declared.database == database.rawValue else {
            let hint = self.recordTypes.isEmpty ? " (nothing is deployed here yet: `stadiumcloud schema deploy` copies development's schema)" : ""
            throw CloudError.badRequest("\(path): record type \(recordType) is not declared for the \(database.rawValue) database\(hint)")
        }
        for (name, value) in fields {
            guard let field = declared.fields[name] else {
                throw CloudError.badRequest("\(path): field \(name) is not declared for \(recordType)")
            }
            guard field.fieldType == value.type else {
                throw CloudError.badRequest("\(path): field \(name) of \(recordType) is \(field.type), not \(value.type.rawValue)")
            }
        }
    }

    /// What the writes of `operations` would add in development, CloudKit's just-in-time schema: record types
    /// and fields not declared yet, each field typed by its first value (not queryable until marked so). Nil when
    /// nothing is new. A value that contradicts a declared type adds nothing: validation refuses it.
    public func additions(for operations: [RecordOperation], existing: [String: Record], in database: DatabaseScope) -> Schema? {
        var added: [String: RecordTypeSchema] = [:]
        for operation in operations where !operation.type.isDelete && operation.refusal == nil {
            guard let typeName = operation.recordType ?? existing[operation.recordName]?.recordType,
                (try? FieldName.validate(typeName, path: "", what: "record type")) != nil
            else { continue }
            let declared = self.recordTypes[typeName]
            if let declared, declared.database != database.rawValue { continue }
            for (name, raw) in operation.fields ?? [:] where declared?.fields[name] == nil && added[typeName]?.fields[name] == nil {
                let hint = existing[operation.recordName]?.fields[name]?.type
                guard (try? FieldName.validate(name, path: "")) != nil, let value = try? FieldValue.parse(raw, hint: hint, path: "") else {
                    continue
                }
                added[typeName, default: RecordTypeSchema(database: database, fields: [:])].fields[name] = FieldSchema(type: value.type)
            }
            if declared == nil, added[typeName] == nil { added[typeName] = RecordTypeSchema(database: database, fields: [:]) }
        }
        guard !added.isEmpty else { return nil }
        return Schema(recordTypes: added)
    }

    /// This schema with `additions` merged in: new types and fields only, never a change to a declared one.
    public func adding(_ additions: Schema) -> Schema {
        var merged = self
        for (typeName, type) in additions.recordTypes {
            guard var current = merged.recordTypes[typeName] else {
                merged.recordTypes[typeName] = type
                continue
            }
            guard current.database == type.database else { continue }
            for (name, field) in type.fields where current.fields[name] == nil { current.fields[name] = field }
            merged.recordTypes[typeName] = current
        }
        return merged
    }

    /// Why a signed-in person (`userRecordName`) may not apply `operation` in the public database, or nil when the
    /// record type's permissions let them: a create needs `create: authenticated`; an update or delete needs
    /// `write: creator` and the record to be theirs. People never add types or fields (no just-in-time schema).
    public func publicRefusal(of operation: RecordOperation, existing: Record?, by userRecordName: String) -> CloudError? {
        guard operation.refusal == nil else { return nil }
        guard let typeName = operation.recordType ?? existing?.recordType else { return nil }
        guard let declared = self.recordTypes[typeName], declared.database == DatabaseScope.public.rawValue else {
            return .accessDenied("record type \(typeName) cannot be written to the public database by people")
        }
        let permissions = declared.permissions ?? .operators
        guard let existing, !existing.deleted else {
            guard !operation.type.isDelete else { return nil }
            return permissions.create == .authenticated ? nil : .accessDenied("only operators create \(typeName) records")
        }
        if let recordType = operation.recordType, recordType != existing.recordType {
            return .accessDenied("record \(operation.recordName) is a \(existing.recordType), not a \(recordType)")
        }
        guard permissions.write == .creator, existing.created.userRecordName == userRecordName else {
            return .accessDenied("only the creator of \(typeName) record \(operation.recordName) may change or delete it")
        }
        return nil
    }

    /// The declared type of a field, used when a client sends values without a `type`.
    public func fieldType(_ field: String, of recordType: String) -> FieldType? {
        self.recordTypes[recordType]?.fields[field]?.fieldType
    }

    /// What deploying `newer` over this schema would do. Destructive changes (a type or field removed, a type
    /// changed) are refused, as CloudKit refuses them in production: data already written depends on them.
    public func changes(to newer: Schema) -> SchemaChanges {
        var changes = SchemaChanges()
        for (typeName, old) in self.recordTypes {
            guard let new = newer.recordTypes[typeName] else {
                changes.destructive.append("record type \(typeName) would be removed")
                continue
            }
            if new.database != old.database {
                changes.destructive.append("record type \(typeName) would move from the \(old.database) to the \(new.database) database")
            }
            for (fieldName, field) in old.fields {
                guard let replacement = new.fields[fieldName] else {
                    changes.destructive.append("field \(typeName).\(fieldName) would be removed")
                    continue
                }
                if replacement.type != field.type {
                    changes.destructive.append("field \(typeName).\(fieldName) would change type from \(field.type) to \(replacement.type)")
                }
                if replacement.owner != field.owner {
                    changes.destructive.append(
                        "field \(typeName).\(fieldName) would change owner from \(field.owner.rawValue) to \(replacement.owner.rawValue)")
                }
                if replacement.queryable && !field.queryable { changes.additive.append("index on \(typeName).\(fieldName)") }
                if replacement.sortable && !field.sortable { changes.additive.append("sorting on \(typeName).\(fieldName)") }
                if replacement.searchable && !field.searchable { changes.additive.append("word search on \(typeName).\(fieldName)") }
            }
            for fieldName in new.fields.keys where old.fields[fieldName] == nil {
                changes.additive.append("field \(typeName).\(fieldName)")
            }
            if new.permissions != old.permissions { changes.additive.append("permissions of \(typeName)") }
        }
        for typeName in newer.recordTypes.keys where self.recordTypes[typeName] == nil {
            changes.additive.append("record type \(typeName)")
        }
        changes.additive.sort()
        changes.destructive.sort()
        return changes
    }
}

/// The difference between a deployed schema and a new one.
public struct SchemaChanges: Sendable, Equatable {
    public var additive: [String] = []
    public var destructive: [String] = []
    public var isEmpty: Bool { self.additive.isEmpty && self.destructive.isEmpty }

    public init(additive: [String] = [], destructive: [String] = []) {
        self.additive = additive
        self.destructive = destructive
    }
}

import Foundation

extension Schema {
    /// CloudKit's rule for queries (`records/query`, query subscriptions): the record type is declared, filters
    /// name fields marked queryable and sorts fields marked sortable; system fields always qualify.
    public func check(_ query: RecordQuery, path: String) throws {
        guard let type = self.recordTypes[query.recordType] else {
            throw CloudError.badRequest("\(path).recordType \(query.recordType) is not in the schema")
        }
        func field(_ target: QueryTarget, _ what: String, _ allowed: (FieldSchema) -> Bool) throws {
            guard case .field(let name) = target else { return }
            guard let field = type.fields[name] else { throw CloudError.badRequest("\(path): \(query.recordType) has no field \(name)") }
            guard allowed(field) else {
                throw CloudError.badRequest("\(path): field \(name) of \(query.recordType) is not marked \(what) in the schema")
            }
        }
        for filter in query.filters {
            if filter.comparator.searchesTokens {
                try field(filter.target, "searchable", \.searchable)
            } else {
                try field(filter.target, "queryable", \.queryable)
            }
        }
        for sort in query.sorts { try field(sort.target, "sortable", \.sortable) }
    }
}
