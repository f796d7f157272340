/// One page of a zone's changes.
public struct ZoneChanges: Sendable {
    /// Changed records (whole) and tombstones (`deleted`), in change order.
    public var records: [RecordSnapshot]
    public var syncToken: String
    public var moreComing: Bool

    public init(records: [RecordSnapshot], syncToken: String, moreComing: Bool) {
        self.records = records
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// One zone as `changes/database` reports it.
public struct ZoneChange: Sendable {
    public var zoneName: String
    public var deleted: Bool

    public init(zoneName: String, deleted: Bool) {
        self.zoneName = zoneName
        self.deleted = deleted
    }
}

/// One page of a database's zone changes.
public struct DatabaseChanges: Sendable {
    public var zones: [ZoneChange]
    public var syncToken: String
    public var moreComing: Bool

    public init(zones: [ZoneChange], syncToken: String, moreComing: Bool) {
        self.zones = zones
        self.syncToken = syncToken
        self.moreComing = moreComing
    }
}

/// One page of query results.
public struct QueryPage: Sendable {
    public var records: [RecordSnapshot]
    /// The zone of each record (a zone-wide query spans zones).
    public var zoneNames: [String]
    /// Where the next page starts, when there is one.
    public var nextOffset: Int64?

    public init(records: [RecordSnapshot], zoneNames: [String], nextOffset: Int64?) {
        self.records = records
        self.zoneNames = zoneNames
        self.nextOffset = nextOffset
    }
}
