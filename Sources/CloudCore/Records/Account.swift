/// A person with a private database. `userRecordName` is the CloudKit identity (`_` + 32 hex digits).
public struct Account: Sendable, Hashable {
    public var id: Int64
    public var name: String
    public var userRecordName: String

    public init(id: Int64, name: String, userRecordName: String) {
        self.id = id
        self.name = name
        self.userRecordName = userRecordName
    }
}
