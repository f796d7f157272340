import Foundation

/// Who changed a record, when (ms since 1970) and from which device: the `created`/`modified` dictionaries.
public struct ChangeStamp: Sendable, Hashable {
    public var timestamp: Int64
    public var userRecordName: String
    public var deviceID: String

    public init(timestamp: Int64, userRecordName: String, deviceID: String) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }
}

/// One record version as stored: live, or a tombstone (`deleted`, no fields).
public struct Record: Sendable, Hashable {
    public var recordName: String
    public var recordType: String
    /// Position in the database's change sequence; also the source of the `recordChangeTag`.
    public var changeSeq: Int64
    public var deleted: Bool
    /// The fields; `encodedFields` follows every change.
    public var fields: [String: FieldValue] { didSet { self.encodedFields = Self.encode(self.fields) } }
    /// The fields as JSON text (what the database stores and responses carry), encoded once per change.
    public private(set) var encodedFields: String
    public var created: ChangeStamp
    public var modified: ChangeStamp

    /// - Parameter encodedFields: the fields' JSON text when the caller already has it (read from the database).
    public init(
        recordName: String, recordType: String, changeSeq: Int64, deleted: Bool = false,
        fields: [String: FieldValue], encodedFields: String? = nil, created: ChangeStamp, modified: ChangeStamp
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.changeSeq = changeSeq
        self.deleted = deleted
        self.fields = fields
        self.encodedFields = encodedFields ?? Self.encode(fields)
        self.created = created
        self.modified = modified
    }

    public var changeTag: String { ChangeTag.make(self.changeSeq) }

    public static func encode(_ fields: [String: FieldValue]) -> String {
        var writer = JSONWriter(capacity: 64 * fields.count + 2)
        writer.object { writer in
            for name in fields.keys.sorted() {
                let field = fields[name]!
                writer.key(name)
                writer.object { writer in
                    writer.key("type")
                    writer.string(field.type.rawValue)
                    writer.key("value")
                    writer.value(field.value)
                }
            }
        }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// `recordChangeTag`s are the record's change sequence number in base 36: short, opaque, unique per version.
public enum ChangeTag {
    public static func make(_ seq: Int64) -> String { String(seq, radix: Self.radix) }
    public static let radix = 36
}

/// The names CloudKit gives the zones and databases this server knows.
public enum DatabaseScope: String, Sendable, CaseIterable {
    case `public`, `private`
}

/// The zone every database has and that cannot be created or deleted.
public let defaultZoneName = "_defaultZone"

/// A new version of a record decided by a whole-zone rewrite (the canonical import); the store numbers it.
public struct RecordDraft: Sendable, Equatable {
    public var recordName: String
    public var recordType: String
    public var fields: [String: FieldValue]

    public init(recordName: String, recordType: String, fields: [String: FieldValue]) {
        self.recordName = recordName
        self.recordType = recordType
        self.fields = fields
    }
}

/// CloudKit TIMESTAMPs: milliseconds since 1970.
public enum Timestamp {
    /// Now, in milliseconds since 1970.
    public static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
