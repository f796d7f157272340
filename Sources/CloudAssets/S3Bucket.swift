import AsyncHTTPClient
import CloudCore
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Where an S3-compatible bucket is: `s3://bucket[/prefix]?endpoint=http://host:port&region=…&partSize=…`.
/// Without `endpoint` it is AWS's regional endpoint. Requests use path-style URLs, which AWS, MinIO, Ceph and
/// moto all accept.
public struct S3Location: Sendable, Equatable {
    public var bucket: String
    /// Prepended to every key ("" or ends with `/`), so several servers or tests can share a bucket.
    public var prefix: String
    public var endpoint: String
    public var region: String
    /// Bytes per multipart part: S3's minimum is 5 MiB (except the last part).
    public var partSize: Int

    public static let minimumPartSize = 5 * 1024 * 1024

    /// Reads an `s3://` URL; nil when `text` is not one (a folder path); throws when it is one but malformed.
    public static func parse(_ text: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> S3Location? {
        guard text.hasPrefix("s3://") else { return nil }
        guard let url = URLComponents(string: text), let bucket = url.host, !bucket.isEmpty else {
            throw CloudError.badRequest("asset location \(text.debugDescription) is not s3://bucket[/prefix]?endpoint=…")
        }
        let options = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let unknown = Set(options.keys).subtracting(["endpoint", "region", "partSize"])
        guard unknown.isEmpty else { throw CloudError.badRequest("unknown s3:// option(s): \(unknown.sorted().joined(separator: ", "))") }
        let region = options["region"] ?? environment["AWS_REGION"] ?? environment["AWS_DEFAULT_REGION"] ?? "us-east-1"
        let endpoint = options["endpoint"] ?? "https://s3.\(region).amazonaws.com"
        guard let parsed = URLComponents(string: endpoint), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw CloudError.badRequest("s3:// endpoint \(endpoint.debugDescription) is not an http(s) URL")
        }
        let partSize = Int(options["partSize"] ?? "") ?? 8 * 1024 * 1024
        guard partSize >= Self.minimumPartSize else { throw CloudError.badRequest("s3:// partSize must be at least \(Self.minimumPartSize) bytes") }
        let path = url.path.split(separator: "/").joined(separator: "/")
        return S3Location(
            bucket: bucket, prefix: path.isEmpty ? "" : path + "/", endpoint: endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint,
            region: region, partSize: partSize)
    }
}

/// One bucket over HTTP: the handful of S3 calls the asset store needs, each signed with Signature V4.
/// A failure the client did not cause becomes TRY_AGAIN_LATER (logged with S3's code, never sent to the client).
struct S3Bucket: Sendable {
    let location: S3Location
    let signer: SignatureV4
    let http: HTTPClient
    let logger: Logger
    /// `host[:port]` of the endpoint, as signed.
    let host: String

    init(location: S3Location, credentials: AWSCredentials, http: HTTPClient, logger: Logger) {
        self.location = location
        self.signer = SignatureV4(credentials: credentials, region: location.region)
        self.http = http
        self.logger = logger
        let endpoint = URLComponents(string: location.endpoint)!
        self.host = endpoint.host! + (endpoint.port.map { ":\($0)" } ?? "")
    }

    struct Object: Sendable {
        var key: String
        var size: Int64
        var modified: Date
    }

    struct Part: Sendable {
        var number: Int
        var size: Int64
        var etag: String
        var modified: Date
    }

    struct MultipartUpload: Sendable {
        var key: String
        var id: String
        var initiated: Date
    }

    // MARK: Objects

    func put(_ key: String, _ body: ByteBuffer) async throws {
        _ = try await self.send(.PUT, key, body: body, doing: "store \(key)")
    }

    /// The size of `key`, or nil when there is no such object.
    func size(of key: String) async throws -> Int64? {
        let response = try await self.send(.HEAD, key, accepting: [404], doing: "look up \(key)")
        guard response.status != .notFound else { return nil }
        return response.headers.first(name: "content-length").flatMap { Int64($0) } ?? 0
    }

    /// The bytes of a small object (at most `limit`), or nil when there is none.
    func get(_ key: String, limit: Int) async throws -> ByteBuffer? {
        let response = try await self.send(.GET, key, accepting: [404], doing: "read \(key)")
        guard response.status != .notFound else { return nil }
        return try await self.reading(key) { try await response.body.collect(upTo: limit) }
    }

    /// Streams `range` (or all) of `key` to `write`.
    func stream(_ key: String, range: Range<Int64>?, to write: (ByteBuffer) async throws -> Void) async throws {
        let headers = range.map { [("range", "bytes=\($0.lowerBound)-\($0.upperBound - 1)")] } ?? []
        let response = try await self.send(.GET, key, headers: headers, accepting: [404], doing: "read \(key)", timeout: .minutes(10))
        guard response.status != .notFound else { throw CloudError.notFound("no such asset") }
        try await self.reading(key) {
            for try await chunk in response.body { try await write(chunk) }
        }
    }

    func delete(_ key: String) async throws {
        _ = try await self.send(.DELETE, key, accepting: [404], doing: "delete \(key)")
    }

    /// A server-side copy (S3 has no rename; each object is written atomically).
    func copy(_ source: String, to destination: String) async throws {
        let copySource = "/" + self.location.bucket + "/" + SignatureV4.encodePath(self.location.prefix + source)
        let response = try await self.send(.PUT, destination, headers: [("x-amz-copy-source", copySource)], doing: "copy \(source)")
        // S3 may answer 200 and report a failed copy in the body.
        try await self.checkBody(response, doing: "copy \(source)")
    }

    /// Every object whose key starts with `prefix`, page by page.
    func list(_ prefix: String) async throws -> [Object] {
        try await self.pages(nil, [("list-type", "2"), ("prefix", self.location.prefix + prefix)], doing: "list \(prefix)") { xml in
            S3XML.text("NextContinuationToken", in: xml).map { [("continuation-token", $0)] }
        }.flatMap { S3XML.elements("Contents", in: $0) }.compactMap { entry in
            guard let key = self.unprefixed(S3XML.text("Key", in: entry)) else { return nil }
            return Object(key: key, size: Int64(S3XML.text("Size", in: entry) ?? "") ?? 0, modified: S3XML.date("LastModified", in: entry))
        }
    }

    /// A key of this location without its prefix; nil for none or another location's.
    func unprefixed(_ key: String?) -> String? {
        guard let key, key.hasPrefix(self.location.prefix) else { return nil }
        return String(key.dropFirst(self.location.prefix.count))
    }

    // MARK: Multipart uploads

    func startMultipartUpload(_ key: String) async throws -> String {
        let xml = try await self.xml(.POST, key, query: [("uploads", "")], doing: "start a multipart upload of \(key)")
        guard let id = S3XML.text("UploadId", in: xml) else { throw self.unavailable("start a multipart upload of \(key)", detail: "no UploadId") }
        return id
    }

    /// Uploads one part and returns its ETag.
    func uploadPart(_ key: String, upload id: String, number: Int, _ body: ByteBuffer) async throws -> String {
        let response = try await self.send(
            .PUT, key, query: [("partNumber", String(number)), ("uploadId", id)], body: body, doing: "upload a part of \(key)")
        return response.headers.first(name: "etag") ?? ""
    }

    func parts(_ key: String, upload id: String) async throws -> [Part] {
        try await self.pages(key, [("uploadId", id)], doing: "list the parts of \(key)") { xml in
            S3XML.text("NextPartNumberMarker", in: xml).map { [("part-number-marker", $0)] }
        }.flatMap { S3XML.elements("Part", in: $0) }.map { entry in
            Part(
                number: Int(S3XML.text("PartNumber", in: entry) ?? "") ?? 0, size: Int64(S3XML.text("Size", in: entry) ?? "") ?? 0,
                etag: S3XML.text("ETag", in: entry) ?? "", modified: S3XML.date("LastModified", in: entry))
        }.sorted { $0.number < $1.number }
    }

    /// Multipart uploads in progress whose key starts with `prefix`, oldest first.
    func multipartUploads(_ prefix: String) async throws -> [MultipartUpload] {
        try await self.pages(nil, [("uploads", ""), ("prefix", self.location.prefix + prefix)], doing: "list multipart uploads") { xml in
            [("key-marker", S3XML.text("NextKeyMarker", in: xml) ?? ""), ("upload-id-marker", S3XML.text("NextUploadIdMarker", in: xml) ?? "")]
        }.flatMap { S3XML.elements("Upload", in: $0) }.compactMap { entry in
            guard let key = self.unprefixed(S3XML.text("Key", in: entry)), let id = S3XML.text("UploadId", in: entry) else { return nil }
            return MultipartUpload(key: key, id: id, initiated: S3XML.date("Initiated", in: entry))
        }.sorted { $0.initiated < $1.initiated }
    }

    func completeMultipartUpload(_ key: String, upload id: String, parts: [Part]) async throws {
        let body =
            "<CompleteMultipartUpload>"
            + parts.map { "<Part><PartNumber>\($0.number)</PartNumber><ETag>\(S3XML.escape($0.etag))</ETag></Part>" }.joined()
            + "</CompleteMultipartUpload>"
        let response = try await self.send(.POST, key, query: [("uploadId", id)], body: ByteBuffer(string: body), doing: "complete \(key)")
        try await self.checkBody(response, doing: "complete \(key)")
    }

    func abortMultipartUpload(_ key: String, upload id: String) async throws {
        _ = try await self.send(.DELETE, key, query: [("uploadId", id)], accepting: [404], doing: "abort \(key)")
    }

    // MARK: Requests

    /// Sends one signed request; `key` is relative to the location's prefix (nil: the bucket itself).
    func send(
        _ method: HTTPMethod, _ key: String?, query: [(String, String)] = [], headers extra: [(String, String)] = [], body: ByteBuffer? = nil,
        accepting: Set<Int> = [], doing what: String, timeout: TimeAmount = .seconds(60)
    ) async throws -> HTTPClientResponse {
        let path = "/" + self.location.bucket + (key.map { "/" + self.location.prefix + $0 } ?? "")
        let payloadHash = body.map { $0.withUnsafeReadableBytes { SHA256.hash(data: $0).hexString } } ?? SignatureV4.emptyPayloadHash
        let headers: [(String, String)] = [("host", self.host), ("x-amz-content-sha256", payloadHash)] + extra
        let signed = self.signer.sign(method: method.rawValue, path: path, query: query, headers: headers, payloadHash: payloadHash, date: Date())
        let queryText = SignatureV4.canonicalQuery(query)
        var request = HTTPClientRequest(url: self.location.endpoint + SignatureV4.encodePath(path) + (queryText.isEmpty ? "" : "?" + queryText))
        request.method = method
        for (name, value) in headers + signed where name != "host" { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        let response: HTTPClientResponse
        do {
            response = try await self.http.execute(request, timeout: timeout)
        } catch {
            throw self.unavailable(what, detail: "\(error)")
        }
        let status = Int(response.status.code)
        guard (200..<300).contains(status) || accepting.contains(status) else {
            let text = (try? await response.body.collect(upTo: 64 * 1024)).map { String(buffer: $0) } ?? ""
            throw self.unavailable(what, detail: "HTTP \(status) \(S3XML.text("Code", in: text[...]) ?? "")")
        }
        return response
    }

    /// The answers of a listing, page after page: `next` reads from a truncated page what the next request adds.
    func pages(
        _ key: String?, _ query: [(String, String)], doing what: String, next: (Substring) -> [(String, String)]?
    ) async throws -> [Substring] {
        var pages: [Substring] = []
        var more: [(String, String)] = []
        repeat {
            let xml = try await self.xml(.GET, key, query: query + more, doing: what)
            pages.append(xml)
            more = S3XML.text("IsTruncated", in: xml) == "true" ? next(xml) ?? [] : []
        } while !more.isEmpty
        return pages
    }

    func xml(_ method: HTTPMethod, _ key: String?, query: [(String, String)], doing what: String) async throws -> Substring {
        let response = try await self.send(method, key, query: query, doing: what)
        return try await self.reading(what) { String(buffer: try await response.body.collect(upTo: 16 * 1024 * 1024))[...] }
    }

    func checkBody(_ response: HTTPClientResponse, doing what: String) async throws {
        let text = try await self.reading(what) { String(buffer: try await response.body.collect(upTo: 1024 * 1024)) }
        if text.contains("<Error>") { throw self.unavailable(what, detail: S3XML.text("Code", in: text[...]) ?? "error in body") }
    }

    /// Runs `body`, turning a connection lost while reading an answer into TRY_AGAIN_LATER.
    func reading<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as CloudError {
            throw error
        } catch {
            throw self.unavailable("read the answer to \(what)", detail: "\(error)")
        }
    }

    func unavailable(_ what: String, detail: String) -> CloudError {
        self.logger.error("asset storage failed", metadata: ["operation": "\(what)", "detail": "\(detail)"])
        return CloudError(.tryAgainLater, "asset storage is unavailable; retry", retryAfter: 1)
    }
}

/// Just enough XML for S3's answers, which are flat lists of known elements that never nest in themselves.
enum S3XML {
    /// The inner text of each `<name>…</name>` in `xml`, in order.
    static func elements(_ name: String, in xml: Substring) -> [Substring] {
        var found: [Substring] = []
        var rest = xml[...]
        while let open = rest.range(of: "<\(name)>"), let close = rest[open.upperBound...].range(of: "</\(name)>") {
            found.append(rest[open.upperBound..<close.lowerBound])
            rest = rest[close.upperBound...]
        }
        return found
    }

    static func text(_ name: String, in xml: Substring) -> String? {
        self.elements(name, in: xml).first.map { self.unescape(String($0)) }
    }

    /// An ISO 8601 time such as `2026-11-23T02:30:00.000Z` (distant past when missing or unreadable).
    static func date(_ name: String, in xml: Substring) -> Date {
        guard let text = self.text(name, in: xml) else { return .distantPast }
        return (try? Date(text, strategy: Self.withFraction)) ?? (try? Date(text, strategy: .iso8601)) ?? .distantPast
    }

    static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }

    static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&apos;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    }
}
