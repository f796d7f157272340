import CloudCore
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where a device's server is: the base URL, the container, the environment and the container's API token.
public struct ServerEndpoint: Sendable, Codable, Equatable {
    public var baseURL: URL
    public var container: String
    public var environment: String
    public var apiToken: String

    public init(baseURL: URL, container: String, environment: String = "development", apiToken: String) {
        self.baseURL = baseURL
        self.container = container
        self.environment = environment
        self.apiToken = apiToken
    }
}

/// What a device sees go wrong: the server's CloudKit-style error, or `NETWORK_ERROR` (status 0) when no answer
/// came. `code` is the `serverErrorCode`.
public struct SyncError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var reason: String
    public var status: Int
    public var retryAfter: Int?

    public init(code: String, reason: String, status: Int, retryAfter: Int? = nil) {
        self.code = code
        self.reason = reason
        self.status = status
        self.retryAfter = retryAfter
    }

    public static let networkErrorCode = "NETWORK_ERROR"

    public var description: String { self.status == 0 ? "\(self.code): \(self.reason)" : "\(self.code) (HTTP \(self.status)): \(self.reason)" }

    /// The session ended or was never there: sign in again.
    public var needsSignIn: Bool {
        self.code == ServerErrorCode.authenticationRequired.rawValue || self.code == ServerErrorCode.authenticationFailed.rawValue
    }

    /// Reads a `{serverErrorCode, reason, retryAfter}` answer, or the culprit of a failed atomic batch (HTTP 400
    /// with per-record results: the first error that is not ATOMIC_ERROR); anything else is reported with its status.
    static func from(status: Int, body: Data, headers: HTTPURLResponse) -> SyncError {
        let json = try? JSONValue.parse(Array(body))
        let retryAfter = json?["retryAfter"]?.int64Value.map(Int.init) ?? headers.value(forHTTPHeaderField: "Retry-After").flatMap { Int($0) }
        let culprit = json?["records"]?.arrayValue?.first { ($0["serverErrorCode"]?.stringValue).map { $0 != "ATOMIC_ERROR" } ?? false }
        if let error = json?["serverErrorCode"] != nil ? json : culprit, let code = error["serverErrorCode"]?.stringValue {
            return SyncError(code: code, reason: error["reason"]?.stringValue ?? "", status: status, retryAfter: retryAfter)
        }
        return SyncError(
            code: status >= 500 ? "SERVICE_UNAVAILABLE" : "UNKNOWN_ERROR", reason: "HTTP \(status) without a CloudKit error body", status: status,
            retryAfter: retryAfter)
    }
}

/// Keeps the session's web auth token. CloudKit rotates it on every answer, so the newest one must be saved
/// before anything else happens with the answer.
public protocol WebAuthTokenKeeper: Sendable {
    func webAuthToken() throws -> String?
    func setWebAuthToken(_ token: String?) throws
}

/// How often and how long to retry what may be retried: network failures, 5xx and throttling.
public struct RetryPolicy: Sendable {
    public var attempts: Int
    public var firstDelay: Duration
    public var maxDelay: Duration
    /// How the device waits between tries: `Task.sleep`, or a test's clock.
    public var wait: @Sendable (Duration) async throws -> Void

    public init(
        attempts: Int = 4, firstDelay: Duration = .milliseconds(250), maxDelay: Duration = .seconds(30),
        wait: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.attempts = attempts
        self.firstDelay = firstDelay
        self.maxDelay = maxDelay
        self.wait = wait
    }

    func delay(attempt: Int, retryAfter: Int?) -> Duration {
        if let retryAfter { return min(.seconds(retryAfter), self.maxDelay) }
        return min(self.firstDelay * (1 << min(attempt, 10)), self.maxDelay)
    }

    /// Waits before try `attempt + 2`: what the server asked for, or the backoff.
    func pause(after attempt: Int, retryAfter: Int?) async throws {
        try await self.wait(self.delay(attempt: attempt, retryAfter: retryAfter))
    }
}

/// The CloudKit Web Services calls a device makes: database operations with the rotating web auth token,
/// password sign-in, and the asset URLs. Every call it retries is safe to repeat: reads, `records/modify` with an
/// `Idempotency-Key`, upload chunks at an explicit offset.
public struct CloudKitWebService: Sendable {
    public let endpoint: ServerEndpoint
    let transport: any HTTPTransport
    let tokens: any WebAuthTokenKeeper
    let deviceID: String
    let retry: RetryPolicy

    public init(
        endpoint: ServerEndpoint, transport: any HTTPTransport = URLSessionTransport(), tokens: any WebAuthTokenKeeper, deviceID: String,
        retry: RetryPolicy = RetryPolicy()
    ) {
        self.endpoint = endpoint
        self.transport = transport
        self.tokens = tokens
        self.deviceID = deviceID
        self.retry = retry
    }

    /// The answer to a password sign-in.
    public struct SignIn: Sendable {
        public var userRecordName: String
        public var expiresInSeconds: Int64?
    }

    /// `POST /signin` with JSON; keeps the session token it answers.
    public func signIn(accountName: String, password: String, keepSignedIn: Bool = true) async throws -> SignIn {
        let body: JSONValue = ["accountName": .string(accountName), "password": .string(password), "keepSignedIn": .bool(keepSignedIn)]
        var request = URLRequest(url: self.endpoint.baseURL.appendingPathComponent("signin"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = Data(JSONWriter.encode(body).utf8)
        let json = try await self.exchange(request, retrying: false)
        guard let token = json["ckWebAuthToken"]?.stringValue, let user = json["userRecordName"]?.stringValue else {
            throw SyncError(code: "UNKNOWN_ERROR", reason: "the sign-in answer has no ckWebAuthToken", status: 200)
        }
        try self.tokens.setWebAuthToken(token)
        return SignIn(userRecordName: user, expiresInSeconds: json["expiresInSeconds"]?.int64Value)
    }

    /// `POST /signout`: ends the session on the server (every token rotated from it). The device forgets it
    /// even when the server cannot be told (the error is still thrown); the session then lapses when idle.
    public func signOut() async throws {
        guard let token = try self.tokens.webAuthToken() else { return }
        try self.tokens.setWebAuthToken(nil)
        var request = URLRequest(
            url: try Self.url(self.endpoint.baseURL.absoluteString.trimmingSuffix("/") + "/signout?ckWebAuthToken=" + Self.escape(token)))
        request.httpMethod = "POST"
        _ = try await self.send(request, retrying: true)
    }

    /// One database operation (`records/modify`, `changes/zone`, …). The private database needs a session; so
    /// does writing the public database as a person (`asPerson`: records people create there, such as trip polls).
    public func call(
        _ scope: DatabaseScope, _ operation: String, _ body: JSONValue, idempotencyKey: String? = nil, asPerson: Bool = false
    ) async throws -> JSONValue {
        try await self.call(scope, operation, body: Data(JSONWriter.encode(body).utf8), idempotencyKey: idempotencyKey, asPerson: asPerson)
    }

    /// A database operation with a body of exact bytes: a retried batch must be byte-identical to the first try.
    public func call(
        _ scope: DatabaseScope, _ operation: String, body: Data, idempotencyKey: String? = nil, asPerson: Bool = false
    ) async throws -> JSONValue {
        var request = try self.request(scope, operation, body: body, asPerson: asPerson)
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        return try await self.exchange(request, retrying: true)
    }

    /// The POST of a database operation with its JSON body.
    func request(_ scope: DatabaseScope, _ operation: String, body: Data, asPerson: Bool = false) throws -> URLRequest {
        var request = URLRequest(url: try self.url(scope: scope, operation: operation, asPerson: asPerson))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body
        return request
    }

    func url(scope: DatabaseScope, operation: String, asPerson: Bool = false) throws -> URL {
        var query = "ckAPIToken=\(Self.escape(self.endpoint.apiToken))"
        if scope == .private || asPerson {
            guard let token = try self.tokens.webAuthToken() else {
                throw SyncError(code: ServerErrorCode.authenticationRequired.rawValue, reason: "not signed in", status: 421)
            }
            query += "&ckWebAuthToken=\(Self.escape(token))"
        }
        let path = "database/1/\(Self.escape(self.endpoint.container))/\(self.endpoint.environment)/\(scope.rawValue)/\(operation)"
        guard let url = URL(string: self.endpoint.baseURL.absoluteString.trimmingSuffix("/") + "/" + path + "?" + query) else {
            throw SyncError(code: "BAD_REQUEST", reason: "cannot build a URL from \(self.endpoint.baseURL)", status: 0)
        }
        return url
    }

    /// Sends `request`, retrying network failures, 5xx and throttling as the policy allows; saves the rotated
    /// token of a successful answer; answers the parsed JSON or throws the server's error.
    func exchange(_ request: URLRequest, retrying: Bool) async throws -> JSONValue {
        let data: Data
        do {
            (data, _) = try await self.send(request, retrying: retrying)
        } catch let error as SyncError where error.code == ServerErrorCode.authenticationRequired.rawValue {
            self.forgetRefusedSession(of: request)
            throw error
        }
        if data.isEmpty { return .object([:]) }
        do {
            return try JSONValue.parse(Array(data))
        } catch {
            throw SyncError(code: "UNKNOWN_ERROR", reason: "the server's answer is not JSON", status: 200)
        }
    }

    /// The session is gone (signed out elsewhere, expired, the account erased): the device is signed out, unless
    /// another request brought a newer token meanwhile (a rotation race refuses the older one). Not on 401: that is the
    /// API token's, and the session may be fine.
    func forgetRefusedSession(of request: URLRequest) {
        let sent = request.url.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false) }?.queryItems?
            .first { $0.name == "ckWebAuthToken" }?.value
        if let sent, (try? self.tokens.webAuthToken()) == sent { try? self.tokens.setWebAuthToken(nil) }
    }

    /// A database operation whose answer is a file (`users/export`): written to `destination` as it arrives, never
    /// held in memory. Not retried: a caller that loses it starts over.
    public func download(_ scope: DatabaseScope, _ operation: String, _ body: JSONValue, to destination: URL) async throws {
        var request = try self.request(scope, operation, body: Data(JSONWriter.encode(body).utf8))
        request.setValue(self.deviceID, forHTTPHeaderField: "X-StadiumCloud-Device-ID")
        let response: HTTPURLResponse
        do { response = try await self.transport.download(request, to: destination) } catch {
            throw SyncError(
                code: SyncError.networkErrorCode, reason: "no answer from \(self.endpoint.baseURL): \(error.localizedDescription)", status: 0)
        }
        guard (200..<300).contains(response.statusCode) else {
            let body = (try? Data(contentsOf: destination)) ?? Data()
            try? FileManager.default.removeItem(at: destination)
            let error = SyncError.from(status: response.statusCode, body: body, headers: response)
            if error.code == ServerErrorCode.authenticationRequired.rawValue { self.forgetRefusedSession(of: request) }
            throw error
        }
        try self.keepRotatedToken(of: response)
    }

    /// Saves the web auth token a successful answer rotated to.
    func keepRotatedToken(of response: HTTPURLResponse) throws {
        if let rotated = response.value(forHTTPHeaderField: "X-Apple-CloudKit-Web-Auth-Token"), !rotated.isEmpty {
            try self.tokens.setWebAuthToken(rotated)
        }
    }

    /// Sends `request` (with the device id), retrying as `exchange` does; answers the body of a 2xx answer.
    func send(_ request: URLRequest, retrying: Bool) async throws -> (Data, HTTPURLResponse) {
        var request = request
        request.setValue(self.deviceID, forHTTPHeaderField: "X-StadiumCloud-Device-ID")
        var attempt = 0
        while true {
            let failure: SyncError
            do {
                let (data, response) = try await self.transport.send(request)
                if (200..<300).contains(response.statusCode) {
                    try self.keepRotatedToken(of: response)
                    return (data, response)
                }
                let error = SyncError.from(status: response.statusCode, body: data, headers: response)
                guard retrying, response.statusCode >= 500, response.statusCode != 501 else { throw error }
                failure = error
            } catch let error as SyncError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                let error = SyncError(
                    code: SyncError.networkErrorCode, reason: "no answer from \(self.endpoint.baseURL): \(error.localizedDescription)", status: 0)
                guard retrying else { throw error }
                failure = error
            }
            attempt += 1
            guard attempt < self.retry.attempts else { throw failure }
            try await self.retry.pause(after: attempt - 1, retryAfter: failure.retryAfter)
        }
    }

    /// CloudKit's escaping for tokens in a query: everything but unreserved characters (`+`, `/`, `=` included).
    static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { self.hasSuffix(suffix) ? String(self.dropLast(suffix.count)) : self }
}
