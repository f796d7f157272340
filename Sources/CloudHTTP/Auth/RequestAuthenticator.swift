import CloudCore
import CloudPostgres
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Who is calling: an app (container API token), a signed-in account (plus web auth token) or an operator's
/// server-to-server key.
struct Caller: Sendable {
    var account: Account?
    /// The web auth token's session, rotated in the answer.
    var grant: WebAuthGrant?
    var serverKeyID: String?

    /// The identity written into `created`/`modified`.
    var userRecordName: String { self.account?.userRecordName ?? "_operator" }
}

/// Decides who a request is: `ckAPIToken` plus optional `ckWebAuthToken` (or its older name `ckSession`), or a
/// server-to-server signature. Applies the per-token, per-account and per-key rate limits (docs/AUTH.md).
struct RequestAuthenticator: Sendable {
    let credentials: CredentialStore
    let configuration: ServerConfiguration
    let limiter: RateLimiter

    static let keyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let dateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!

    func caller(for request: Request, body: ByteBuffer, logger: Logger) async throws -> Caller {
        let query = request.uri.queryParameters
        let apiToken = query["ckAPIToken"].map(String.init)
        let webAuthToken = Self.webAuthToken(of: request)
        if [Self.keyIDHeader, Self.dateHeader, Self.signatureHeader].contains(where: { request.headers[$0] != nil }) {
            guard apiToken == nil, webAuthToken == nil else {
                throw CloudError(.authenticationFailed, "a request is signed with a server-to-server key or carries ckAPIToken, not both")
            }
            return try await self.serverToServerCaller(request, body: body, logger: logger)
        }
        guard let apiToken, !apiToken.isEmpty else {
            throw CloudError(.authenticationFailed, "ckAPIToken is required (a container API token: stadiumcloud tokens create)")
        }
        guard try await self.credentials.isAPIToken(apiToken, logger: logger) else {
            throw CloudError(.authenticationFailed, "ckAPIToken is not a valid API token")
        }
        try self.limiter.take("api:" + Self.fingerprint(apiToken), self.configuration.rateLimits.perAPIToken, what: "API token")
        var caller = Caller()
        if let webAuthToken, !webAuthToken.isEmpty {
            let grace = Int64(self.configuration.auth.rotationGraceSeconds) * 1000
            guard let grant = try await self.credentials.grant(forWebAuthToken: webAuthToken, graceMs: grace, logger: logger) else {
                throw self.authenticationRequired(request, "ckWebAuthToken is not valid (expired, signed out or replaced); sign in again")
            }
            try self.limiter.take(RateLimitKeys.account(grant.account.id), self.configuration.rateLimits.perAccount, what: "account")
            caller.account = grant.account
            caller.grant = grant
        }
        return caller
    }

    /// The new web auth token for the answer, or the one presented when rotating fails (it stays valid: its
    /// successor was never used), so a successful operation never turns into an error here.
    func rotatedToken(for caller: Caller, request: Request, logger: Logger) async -> String? {
        guard let grant = caller.grant else { return nil }
        do {
            return try await self.credentials.rotate(grant, logger: logger)
        } catch {
            logger.warning("web auth token rotation failed; the client keeps its token: \(String(reflecting: error))")
            return Self.webAuthToken(of: request)
        }
    }

    /// `ckWebAuthToken`, or its older name `ckSession`.
    static func webAuthToken(of request: Request) -> String? {
        let query = request.uri.queryParameters
        return (query["ckWebAuthToken"] ?? query["ckSession"]).map(String.init)
    }

    func authenticationRequired(_ request: Request, _ reason: String = "request needs authorization") -> CloudError {
        CloudError(.authenticationRequired, reason, redirectURL: baseURL(of: request, self.configuration) + "/signin")
    }

    /// A short, non-secret name for a token in rate-limit keys.
    static func fingerprint(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).prefix(12).hexString
    }

    // MARK: Server-to-server

    /// Verifies CloudKit's `SignatureV1` (ECDSA P-256 over `date:base64(sha256(body)):path`), accepting the
    /// signing variations of real clients, within the clock window and once per signature.
    func serverToServerCaller(_ request: Request, body: ByteBuffer, logger: Logger) async throws -> Caller {
        guard let keyID = request.headers[Self.keyIDHeader], let date = request.headers[Self.dateHeader],
            let signatureText = request.headers[Self.signatureHeader]
        else {
            throw CloudError(.authenticationFailed, "a signed request needs X-Apple-CloudKit-Request-KeyID, -ISO8601Date and -SignatureV1")
        }
        guard let signedAt = Self.parseDate(date) else {
            throw CloudError(.authenticationFailed, "X-Apple-CloudKit-Request-ISO8601Date must look like 2016-01-25T22:15:43Z")
        }
        let window = Double(self.configuration.auth.signatureWindowSeconds)
        guard abs(signedAt.timeIntervalSinceNow) <= window else {
            throw CloudError(
                .authenticationFailed, "the request was signed at \(date), more than \(Int(window / 60)) minutes from the server's clock")
        }
        guard let signatureBytes = Data(base64Encoded: signatureText),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes)
        else {
            throw CloudError(.authenticationFailed, "X-Apple-CloudKit-Request-SignatureV1 is not a base64 DER ECDSA signature")
        }
        guard let key = try await self.credentials.serverKey(id: keyID, logger: logger) else {
            throw CloudError(.authenticationFailed, "unknown or revoked server-to-server key")
        }
        let messages = Self.signedMessages(date: date, body: body.readableBytesView, path: request.uri.path, query: request.uri.query)
        guard messages.contains(where: { key.isValidSignature(signature, for: Data($0.utf8)) }) else {
            throw CloudError(.authenticationFailed, "the signature does not match this request (date:base64(sha256(body)):path)")
        }
        guard try await self.credentials.acceptSignatureOnce(Array(signatureBytes), logger: logger) else {
            throw CloudError(.authenticationFailed, "this signature was used before; sign each request anew")
        }
        try self.limiter.take("key:" + keyID, self.configuration.rateLimits.perServerKey, what: "server-to-server key")
        return Caller(serverKeyID: keyID)
    }

    /// Every message a legitimate client may have signed for this request: the path with or without its query
    /// string; an empty body hashed or left empty; and a body over 1 MiB left unhashed (MistKit signs it so).
    static func signedMessages(date: String, body: some Collection<UInt8>, path: String, query: String?) -> [String] {
        var hashes = [Data(SHA256.hash(data: Array(body))).base64EncodedString()]
        if body.isEmpty || body.count > 1024 * 1024 { hashes.append("") }
        var paths = [path]
        if let query, !query.isEmpty { paths.append(path + "?" + query) }
        return hashes.flatMap { hash in paths.map { "\(date):\(hash):\($0)" } }
    }

    static func parseDate(_ text: String) -> Date? {
        (try? Date(text, strategy: .iso8601)) ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }
}

/// `https://host` for absolute URLs: the configured public URL, else what the client used to reach us.
func baseURL(of request: Request, _ configuration: ServerConfiguration) -> String {
    if let url = configuration.publicBaseURL { return url }
    return "http://" + (request.head.authority ?? "\(configuration.host):\(configuration.port)")
}
