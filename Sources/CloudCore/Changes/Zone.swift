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

/// A public zone that no listing shows (`zones/list`, `changes/database`, a query without a zone) and that anyone who
/// knows its name may read: the name, `unlisted-` and a secret, works as a share code. These are the only zones
/// `zones/modify` creates in the public database, for operators and signed-in people alike (a trip poll lives in
/// one); none is deleted there.
public enum UnlistedZone {
    public static let prefix = "unlisted-"
    /// Long enough not to be guessed: 16 characters of base64url are 96 bits.
    public static let minimumSecretLength = 16

    public static func contains(_ zoneName: String) -> Bool { zoneName.hasPrefix(Self.prefix) }

    /// Why `operation` cannot run in the public database, or nil.
    public static func refusal(of operation: ZoneOperation) -> CloudError? {
        guard case .create(let name) = operation else { return .accessDenied("zones of the public database are never deleted") }
        guard Self.contains(name) else {
            return .accessDenied("only unlisted zones (\(Self.prefix) and a secret) can be created in the public database")
        }
        guard name.count - Self.prefix.count >= Self.minimumSecretLength else {
            return .badRequest("an unlisted zone's name needs a secret of at least \(Self.minimumSecretLength) characters after \(Self.prefix)")
        }
        return nil
    }
}
