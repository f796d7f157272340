/// A resolved CloudKit database: one container × environment × scope (× owner account for private).
public struct DatabaseRef: Sendable, Hashable {
    public var id: Int64
    public var scope: DatabaseScope
    /// The zones' `ownerRecordName`: the account's user record name, `_defaultOwner` for the public database.
    public var ownerRecordName: String

    public init(id: Int64, scope: DatabaseScope, ownerRecordName: String) {
        self.id = id
        self.scope = scope
        self.ownerRecordName = ownerRecordName
    }
}

/// Limits that apply to requests: operations per batch, bytes per record, records per page.
public struct RecordLimits: Sendable {
    public var maxOperations = 200
    public var maxRecordBytes = 1_000_000
    public var maxResultsLimit = 200
    public init() {}
}
