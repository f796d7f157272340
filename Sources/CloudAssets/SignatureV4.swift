import CloudCore
import Crypto
import Foundation

/// Keys for an S3-compatible service, from the environment as the AWS tools read them. Never logged.
public struct AWSCredentials: Sendable {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and the optional `AWS_SESSION_TOKEN`, or nil.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> AWSCredentials? {
        guard let key = environment["AWS_ACCESS_KEY_ID"], let secret = environment["AWS_SECRET_ACCESS_KEY"], !key.isEmpty else { return nil }
        return AWSCredentials(accessKeyID: key, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"])
    }
}

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for one service in one region: signed headers for a request,
/// or a pre-signed URL query. Checked against AWS's published examples in SignatureV4Tests.
public struct SignatureV4: Sendable {
    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The SHA-256 of an empty payload, as `x-amz-content-sha256` wants it.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The headers to add to a request: `x-amz-date`, the session token if any, and `Authorization`, which signs
    /// `headers` (which must include `host`) and `payloadHash`. `path` is the URI path, not yet encoded.
    public func sign(
        method: String, path: String, query: [(String, String)] = [], headers: [(String, String)], payloadHash: String, date: Date
    ) -> [(String, String)] {
        let stamp = Self.timestamp(date)
        var signed = headers.map { ($0.0.lowercased(), $0.1) }
        var added = [("x-amz-date", stamp)]
        if let token = self.credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        signed += added
        let (canonicalHeaders, signedNames) = Self.canonicalHeaders(signed)
        let canonical = [
            method, Self.encodePath(path), Self.canonicalQuery(query), canonicalHeaders, signedNames, payloadHash,
        ].joined(separator: "\n")
        let signature = self.signature(canonicalRequest: canonical, timestamp: stamp)
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(self.credentials.accessKeyID)/\(self.scope(stamp)), SignedHeaders=\(signedNames), Signature=\(signature)"
        return added + [("authorization", authorization)]
    }

    /// The query of a pre-signed URL for `method` on `host` + `path`, valid `expires` seconds from `date`
    /// (the payload is unsigned, as for every pre-signed S3 URL).
    public func presignedQuery(method: String, host: String, path: String, expires: Int, date: Date) -> [(String, String)] {
        let stamp = Self.timestamp(date)
        var query = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", "\(self.credentials.accessKeyID)/\(self.scope(stamp))"),
            ("X-Amz-Date", stamp), ("X-Amz-Expires", String(expires)), ("X-Amz-SignedHeaders", "host"),
        ]
        if let token = self.credentials.sessionToken { query.append(("X-Amz-Security-Token", token)) }
        let canonical = [method, Self.encodePath(path), Self.canonicalQuery(query), "host:\(host)\n", "host", "UNSIGNED-PAYLOAD"].joined(
            separator: "\n")
        return query + [("X-Amz-Signature", self.signature(canonicalRequest: canonical, timestamp: stamp))]
    }

    func scope(_ timestamp: String) -> String { "\(timestamp.prefix(8))/\(self.region)/\(self.service)/aws4_request" }

    func signature(canonicalRequest: String, timestamp: String) -> String {
        let stringToSign = [
            "AWS4-HMAC-SHA256", timestamp, self.scope(timestamp), SHA256.hash(data: Data(canonicalRequest.utf8)).hexString,
        ].joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(self.credentials.secretAccessKey)".utf8))
        for part in [String(timestamp.prefix(8)), self.region, self.service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return Data(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key)).hexString
    }

    static func canonicalHeaders(_ headers: [(String, String)]) -> (text: String, names: String) {
        let sorted = headers.map { (name: $0.0.lowercased(), value: Self.collapseSpaces($0.1)) }.sorted { $0.name < $1.name }
        return (sorted.map { "\($0.name):\($0.value)\n" }.joined(), sorted.map(\.name).joined(separator: ";"))
    }

    static func collapseSpaces(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    static func canonicalQuery(_ query: [(String, String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { (Self.encode($0.0), Self.encode($0.1)) }
        let sorted = encoded.sorted { $0.name == $1.name ? $0.value < $1.value : $0.name < $1.name }
        return sorted.map { $0.name + "=" + $0.value }.joined(separator: "&")
    }

    /// Each segment of `path` encoded, the slashes kept (S3 encodes object keys once).
    static func encodePath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { Self.encode(String($0)) }.joined(separator: "/")
    }

    /// RFC 3986 percent-encoding with AWS's unreserved set: letters, digits, `-`, `.`, `_`, `~`.
    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let day = [parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday].map { String($0).leftPadded(to: 2) }.joined()
        let time = [parts.tm_hour, parts.tm_min, parts.tm_sec].map { String($0).leftPadded(to: 2) }.joined()
        return day + "T" + time + "Z"
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String { String(repeating: "0", count: max(0, length - self.count)) + self }
}
