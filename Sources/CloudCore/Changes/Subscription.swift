/// A CloudKit subscription: which changes of a database a person wants to be told about (docs/SYNC.md, "Live
/// sync"). `query`: records of one type matching filters; `zone`: anything in one zone; `database`: anything in the
/// database (an extension: CloudKit Web Services lacks it, `CKDatabaseSubscription` has it).
public struct Subscription: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case query, zone, database
    }

    /// What a query subscription fires on.
    public struct Triggers: OptionSet, Sendable, Hashable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        public static let create = Triggers(rawValue: 1)
        public static let update = Triggers(rawValue: 2)
        public static let delete = Triggers(rawValue: 4)
        public static let all: Triggers = [.create, .update, .delete]
        /// CloudKit's names, in `firesOn`.
        public static let names: [(String, Triggers)] = [("create", .create), ("update", .update), ("delete", .delete)]
    }

    public var id: String
    public var kind: Kind
    /// The zone of a zone subscription, or of a query subscription that is not zone-wide.
    public var zoneName: String?
    public var query: RecordQuery?
    public var firesOn: Triggers
    public var firesOnce: Bool
    /// The subscription as clients get it back (`subscriptions/list`, `lookup`, `modify`).
    public var definition: JSONValue

    public init(
        id: String, kind: Kind, zoneName: String?, query: RecordQuery?, firesOn: Triggers = .all, firesOnce: Bool = false, definition: JSONValue
    ) {
        self.id = id
        self.kind = kind
        self.zoneName = zoneName
        self.query = query
        self.firesOn = firesOn
        self.firesOnce = firesOnce
        self.definition = definition
    }
}

/// One change a courier tells a token about: the content of one notification frame.
public struct ChangeNotice: Sendable, Equatable {
    public var subscriptionID: String
    public var kind: Subscription.Kind
    public var scope: DatabaseScope
    public var zoneName: String?
    /// Query subscriptions: the record and what happened to it.
    public var recordName: String?
    public var trigger: Subscription.Triggers?
    /// More changes matched than are told one by one: fetch with your tokens.
    public var pruned = false

    public init(
        subscriptionID: String, kind: Subscription.Kind, scope: DatabaseScope, zoneName: String? = nil, recordName: String? = nil,
        trigger: Subscription.Triggers? = nil, pruned: Bool = false
    ) {
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.scope = scope
        self.zoneName = zoneName
        self.recordName = recordName
        self.trigger = trigger
        self.pruned = pruned
    }
}
