/// The CloudKit Web Services `serverErrorCode`s this server emits, with their documented HTTP statuses.
public enum ServerErrorCode: String, Sendable, CaseIterable {
    case accessDenied = "ACCESS_DENIED"
    case atomicError = "ATOMIC_ERROR"
    case authenticationFailed = "AUTHENTICATION_FAILED"
    case authenticationRequired = "AUTHENTICATION_REQUIRED"
    case badRequest = "BAD_REQUEST"
    case conflict = "CONFLICT"
    case exists = "EXISTS"
    case internalError = "INTERNAL_ERROR"
    case notFound = "NOT_FOUND"
    case quotaExceeded = "QUOTA_EXCEEDED"
    case throttled = "THROTTLED"
    case tryAgainLater = "TRY_AGAIN_LATER"
    case validatingReferenceError = "VALIDATING_REFERENCE_ERROR"
    case zoneNotFound = "ZONE_NOT_FOUND"
    /// Extension: a change token older than the tombstone purge horizon (CloudKit's native `changeTokenExpired`).
    case changeTokenExpired = "CHANGE_TOKEN_EXPIRED"

    /// The HTTP status CloudKit Web Services uses for the code.
    public var httpStatus: Int {
        switch self {
        case .accessDenied: 403
        case .atomicError, .badRequest: 400
        case .authenticationFailed: 401
        case .authenticationRequired: 421
        case .conflict, .exists: 409
        case .internalError: 500
        case .notFound, .zoneNotFound: 404
        case .quotaExceeded: 413
        // The archived table says 429; the live service answers throttling with 503 and a retry-after
        // (Apple forum thread 770908), and clients that back off on 503 then do so here too (docs/AUTH.md).
        case .throttled, .tryAgainLater: 503
        case .validatingReferenceError: 412
        case .changeTokenExpired: 410
        }
    }
}

/// The one error vocabulary of the server: every failure a client can see is a `CloudError`.
public struct CloudError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ServerErrorCode
    public var reason: String
    public var retryAfter: Int?
    public var redirectURL: String?

    public init(_ code: ServerErrorCode, _ reason: String, retryAfter: Int? = nil, redirectURL: String? = nil) {
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
        self.redirectURL = redirectURL
    }

    public var description: String { "\(self.code.rawValue): \(self.reason)" }

    public static func badRequest(_ reason: String) -> CloudError { CloudError(.badRequest, reason) }
    public static func notFound(_ reason: String) -> CloudError { CloudError(.notFound, reason) }
    public static func zoneNotFound(_ zoneName: String) -> CloudError { CloudError(.zoneNotFound, "zone \(zoneName) does not exist") }
    public static func accessDenied(_ reason: String) -> CloudError { CloudError(.accessDenied, reason) }
    public static let changeTokenExpired = CloudError(.changeTokenExpired, "client knowledge differs from server knowledge")
    public static let atomicFailure = CloudError(.atomicError, "another operation in this atomic batch failed")
    /// A request authenticated a moment before its account was erased reaches a database that is gone: the answer its
    /// next request gets (421, and the device signs out), not a server error.
    public static let accountErased = CloudError(.authenticationRequired, "this account has been erased; nothing was changed")
}
