/// A live zone with its current change token.
public struct ZoneInfo: Sendable {
    public var zoneName: String
    public var syncToken: String

    public init(zoneName: String, syncToken: String) {
        self.zoneName = zoneName
        self.syncToken = syncToken
    }
}

/// One `zones/modify` operation.
public enum ZoneOperation: Sendable {
    case create(String)
    case delete(String)

    public var zoneName: String {
        switch self {
        case .create(let name), .delete(let name): name
        }
    }
}

/// The outcome of one zone operation.
public enum ZoneOutcome: Sendable {
    case created(ZoneInfo)
    case deleted(String)
    case failed(String, CloudError)
}
