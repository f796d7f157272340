/// A record as read for a response: system fields plus its fields as stored JSON text, spliced into the
/// response without being parsed again.
public struct RecordSnapshot: Sendable, Hashable {
    public var recordName: String
    public var recordType: String
    public var changeSeq: Int64
    public var deleted: Bool
    /// `{"name": {"type": T, "value": V}, …}`, already limited to the desired keys.
    public var fieldsJSON: String
    public var created: ChangeStamp
    public var modified: ChangeStamp
    /// The record's answer as stored with it when it was written: the members of its dictionary but its change tag and
    /// zone (migrations/0017). Only reads whose records go straight into a response read it (pages of changes, queries,
    /// the public cache's ranges), and they leave `fieldsJSON` and the stamps empty: the answer holds them.
    public var storedAnswer: String?

    public init(
        recordName: String, recordType: String, changeSeq: Int64, deleted: Bool, fieldsJSON: String,
        created: ChangeStamp, modified: ChangeStamp, storedAnswer: String? = nil
    ) {
        self.recordName = recordName
        self.recordType = recordType
        self.changeSeq = changeSeq
        self.deleted = deleted
        self.fieldsJSON = fieldsJSON
        self.created = created
        self.modified = modified
        self.storedAnswer = storedAnswer
    }

    /// The snapshot of a record, keeping only `desiredKeys` when given.
    public init(_ record: Record, desiredKeys: Set<String>? = nil) {
        let fieldsJSON = desiredKeys.map { keys in Record.encode(record.fields.filter { keys.contains($0.key) }) } ?? record.encodedFields
        self.init(
            recordName: record.recordName, recordType: record.recordType, changeSeq: record.changeSeq,
            deleted: record.deleted, fieldsJSON: fieldsJSON,
            created: record.created, modified: record.modified)
    }

    public var changeTag: String { ChangeTag.make(self.changeSeq) }
}
