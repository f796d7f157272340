/// The system fields a query can filter and sort on (`systemFieldName`).
public enum SystemField: String, Sendable, CaseIterable {
    case recordName, createdTimestamp, modifiedTimestamp, createdUserRecordName, modifiedUserRecordName
}

/// A field or system field named in a filter or sort.
public enum QueryTarget: Sendable, Hashable {
    case field(String)
    case system(SystemField)
}

/// The filter comparators this server evaluates.
public enum Comparator: String, Sendable, CaseIterable {
    case equals = "EQUALS"
    case notEquals = "NOT_EQUALS"
    case lessThan = "LESS_THAN"
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    case greaterThan = "GREATER_THAN"
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    case near = "NEAR"
    case `in` = "IN"
    case notIn = "NOT_IN"
    case beginsWith = "BEGINS_WITH"
    case notBeginsWith = "NOT_BEGINS_WITH"
    case listContains = "LIST_CONTAINS"
    case notListContains = "NOT_LIST_CONTAINS"
    case listContainsAny = "LIST_CONTAINS_ANY"
    case listContainsAll = "LIST_CONTAINS_ALL"
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    /// Word search in a STRING field the schema marks `searchable`: every word, or any word, of the value.
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"

    public var searchesTokens: Bool { self == .containsAllTokens || self == .containsAnyTokens }
}

/// One `filterBy` entry. For location filters `distance` (metres) is set and `value` is a LOCATION.
public struct QueryFilter: Sendable, Hashable {
    public var comparator: Comparator
    public var target: QueryTarget
    public var value: FieldValue
    public var distance: Double?

    public init(comparator: Comparator, target: QueryTarget, value: FieldValue, distance: Double? = nil) {
        self.comparator = comparator
        self.target = target
        self.value = value
        self.distance = distance
    }
}

/// One `sortBy` entry; with `relativeLocation` records sort by distance from that point.
public struct QuerySort: Sendable, Hashable {
    public var target: QueryTarget
    public var ascending: Bool
    public var relativeLocation: (latitude: Double, longitude: Double)?

    public init(target: QueryTarget, ascending: Bool = true, relativeLocation: (latitude: Double, longitude: Double)? = nil) {
        self.target = target
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }

    public static func == (lhs: QuerySort, rhs: QuerySort) -> Bool {
        lhs.target == rhs.target && lhs.ascending == rhs.ascending
            && lhs.relativeLocation?.latitude == rhs.relativeLocation?.latitude
            && lhs.relativeLocation?.longitude == rhs.relativeLocation?.longitude
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.target)
        hasher.combine(self.ascending)
        hasher.combine(self.relativeLocation?.latitude)
        hasher.combine(self.relativeLocation?.longitude)
    }
}

/// A `records/query` query: one record type, filters ANDed together, sorts in order.
public struct RecordQuery: Sendable, Hashable {
    public var recordType: String
    public var filters: [QueryFilter]
    public var sorts: [QuerySort]

    public init(recordType: String, filters: [QueryFilter] = [], sorts: [QuerySort] = []) {
        self.recordType = recordType
        self.filters = filters
        self.sorts = sorts
    }
}

/// Great-circle distance on a sphere of the Earth's mean radius.
public enum Geo {
    public static let earthRadiusMeters = 6_371_008.8

    public static func distanceMeters(_ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double)) -> Double {
        let radians = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * radians
        let dLon = (b.longitude - a.longitude) * radians
        let h = pow2(sin(dLat / 2)) + cos(a.latitude * radians) * cos(b.latitude * radians) * pow2(sin(dLon / 2))
        return 2 * earthRadiusMeters * asin(min(1, h.squareRoot()))
    }

    private static func pow2(_ x: Double) -> Double { x * x }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
