import CloudAssets
import CloudCore
import CloudRuntime
import CloudPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Signed, expiring capabilities for the asset flow: upload URLs, receipts and download URLs. They need no
/// table: everything they allow is inside them, under the server's HMAC key, with the history of the database they
/// were signed in (after a restore or failover an owner's database id may stand for someone else's).
struct AssetCapabilities: Sendable {
    let signer: TokenSigner
    let history: DatabaseHistory
    /// Whose time lifetimes are measured in.
    let clock: ServerClock

    enum Kind: UInt8 {
        case upload = 5
        case receipt = 6
        case download = 7
    }

    /// Capabilities signed with an epoch have their kind's number plus this (those without, from before epochs,
    /// count until the first fork).
    private static let withEpoch: UInt8 = 3

    /// A capability of `kind` valid for `seconds` from now.
    func sign(_ kind: Kind, owner: String, validFor seconds: Int, size: Int64 = 0, subject: String) -> String {
        let expires = self.clock.now + Int64(seconds) * 1000
        let epoch = self.history.epoch?.id ?? 0
        return self.signer.sign(
            [kind.rawValue + Self.withEpoch] + Array(owner.utf8) + [0] + expires.bigEndianBytes + size.bigEndianBytes + epoch.bigEndianBytes
                + Array(subject.utf8))
    }

    /// The owner, expiry, size and subject of a capability of `kind` signed in this history, or nil when altered,
    /// of another kind or of another history.
    func verify(_ kind: Kind, _ text: String) -> (owner: String, expires: Int64, size: Int64, subject: String)? {
        guard let payload = self.signer.verify(text), let first = payload.first, first == kind.rawValue || first == kind.rawValue + Self.withEpoch,
            let zero = payload.firstIndex(of: 0)
        else { return nil }
        let marked = first != kind.rawValue
        let end = zero + (marked ? 25 : 17)
        guard payload.count >= end else { return nil }
        func number(_ at: Int) -> Int64 { Int64(bigEndianBytes: payload[at..<at + 8]) }
        guard self.history.isCurrent(marked ? number(zero + 17) : 0) else { return nil }
        let owner = String(decoding: payload[1..<zero], as: UTF8.self)
        return (owner, number(zero + 1), number(zero + 9), String(decoding: payload[end...], as: UTF8.self))
    }
}

/// The asset store's owner name for a database: blobs are content-addressed per account (per database).
func assetOwner(_ database: DatabaseRef) -> String { assetOwner(databaseID: database.id) }
func assetOwner(databaseID: Int64) -> String { "db\(databaseID)" }
/// The database an owner name stands for.
func databaseID(ofAssetOwner owner: String) -> Int64? { owner.hasPrefix("db") ? Int64(owner.dropFirst(2)) : nil }

/// `POST /assets/upload/{upload}` (and `HEAD` for the resume offset) and `GET /assets/download/…`: the URLs that
/// `assets/upload` and record reads hand out. They are capability URLs: no ckAPIToken, the signature is the key.
struct AssetController: Sendable {
    let store: any AssetStore
    let records: RecordStore
    let capabilities: AssetCapabilities
    let configuration: ServerConfiguration

    static let uploadOffset = HTTPField.Name("Upload-Offset")!
    static let uploadLength = HTTPField.Name("Upload-Length")!
    static let checksum = HTTPField.Name("X-StadiumCloud-Checksum")!

    func addRoutes(to router: Router<CloudRequestContext>) {
        router.post("assets/upload/:upload") { request, context in try await self.upload(request, context) }
        router.on("assets/upload/:upload", method: .head) { request, context in try await self.offset(request, context) }
        router.get("assets/download/:owner/:checksum/:file") { request, context in try await self.download(request, context) }
        // The same answer without its bytes: clients and proxies ask for the size and the ETag.
        router.on("assets/download/:owner/:checksum/:file", method: .head) { request, context in
            let answer = try await self.download(request, context)
            return Response(status: answer.status, headers: answer.headers)
        }
    }

    /// The upload a signed URL allows, or ACCESS_DENIED.
    func uploadGrant(_ request: Request, _ context: CloudRequestContext) throws -> (upload: String, owner: String, databaseID: Int64) {
        let upload = try context.parameters.require("upload")
        guard let capability = request.uri.queryParameters["c"].map(String.init),
            let grant = self.capabilities.verify(.upload, capability), grant.subject == upload
        else { throw CloudError.accessDenied("this upload URL is not valid") }
        guard grant.expires > self.capabilities.clock.now else {
            throw CloudError.accessDenied("this upload URL has expired; ask assets/upload for a new one")
        }
        guard let databaseID = databaseID(ofAssetOwner: grant.owner) else { throw CloudError.accessDenied("this upload URL is not valid") }
        return (upload, grant.owner, databaseID)
    }

    func offset(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        let grant = try self.uploadGrant(request, context)
        // An erased account's upload is gone, not empty: NOT_FOUND, as its next chunk is answered.
        _ = try await self.assetUsage(of: grant.databaseID, context.logger)
        let length = try await self.store.uploadedLength(of: grant.upload)
        return Response(status: .ok, headers: [Self.uploadOffset: String(length)])
    }

    /// The bytes of assets the database stores, for its quota; `RecordStore.uploadToErasedDatabase` (NOT_FOUND) when
    /// it is gone (its account erased). Within the database routes' deadline (503 while PostgreSQL is away).
    func assetUsage(of databaseID: Int64, _ logger: Logger) async throws -> Int64 {
        let records = self.records
        return try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.configuration.clock) {
            try await records.assetUsage(of: databaseID, logger: logger)
        }
    }

    /// Whether the database is gone (its account erased); false when that cannot be told now.
    func isErased(_ databaseID: Int64, _ logger: Logger) async -> Bool {
        do {
            _ = try await self.assetUsage(of: databaseID, logger)
            return false
        } catch {
            return error as? CloudError == RecordStore.uploadToErasedDatabase
        }
    }

    /// Streams the body to the store: a raw body, or the file part of a multipart one. Extension for
    /// resumable uploads: `Upload-Offset` says where this body starts, `Upload-Length` the whole size; the upload
    /// completes when the store holds `Upload-Length` bytes (or at the end of a body without it).
    func upload(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        let grant = try self.uploadGrant(request, context)
        let boundary = request.headers[.contentType].flatMap(MultipartFileStream<RequestBody>.boundary(of:))
        let maxSize = self.configuration.maxAssetBytes
        let total = try request.headers[Self.uploadLength].map { text -> Int64 in
            guard let value = Int64(text), value > 0 else { throw CloudError.badRequest("Upload-Length must be a positive number of bytes") }
            return value
        }
        // Refuse what is known to be too large before a byte is stored (a multipart body is a little larger than
        // its file, so its Content-Length is only a bound for raw bodies).
        if let length = total ?? (boundary == nil ? request.headers[.contentLength].flatMap({ Int64($0) }) : nil), length > maxSize {
            throw CloudError(.quotaExceeded, "the asset is \(length) bytes; the limit is \(maxSize)")
        }
        let quota = self.configuration.accountQuotaBytes
        let (records, logger, deadline, clock) = (self.records, context.logger, self.configuration.databaseTimeout, self.configuration.clock)
        let used = try await self.assetUsage(of: grant.databaseID, logger)
        if let length = total ?? request.headers[.contentLength].flatMap({ Int64($0) }), length > quota - used {
            throw CloudError(.quotaExceeded, "this account stores \(used) bytes of assets; \(length) more would pass its \(quota)-byte quota")
        }
        var offset: Int64 = 0
        if let text = request.headers[Self.uploadOffset] {
            guard let value = Int64(text), value >= 0 else { throw CloudError.badRequest("Upload-Offset must be a byte offset") }
            offset = value
        } else if try await self.store.uploadedLength(of: grant.upload) > 0 {
            // A plain retry starts over.
            try await self.store.discard(upload: grant.upload)
        }
        do {
            let length =
                if let boundary {
                    try await self.store.append(
                        MultipartFileStream(base: request.body, boundary: boundary), to: grant.upload, at: offset, maxSize: maxSize)
                } else {
                    try await self.store.append(request.body, to: grant.upload, at: offset, maxSize: maxSize)
                }
            if let total, length < total {
                // An erasure that ran while these bytes came in has discarded the uploads it found: these go too (below).
                _ = try await self.assetUsage(of: grant.databaseID, logger)
                var json = JSONWriter()
                json.value(["uploadOffset": .int(length)])
                return Response(
                    status: .ok, headers: [Self.uploadOffset: String(length), .contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
            }
            // A body of unknown length is checked against the quota once its size is known.
            guard used + length <= quota else {
                try await self.store.discard(upload: grant.upload)
                throw CloudError(.quotaExceeded, "this asset would pass the account's \(quota)-byte quota")
            }
            let asset = try await self.store.verify(upload: grant.upload, expectedChecksum: request.headers[Self.checksum])
            let store = self.store
            try await withDatabaseDeadline(deadline, clock: clock) {
                try await records.publishAsset(checksum: asset.checksum, size: asset.size, in: grant.databaseID, logger: logger) {
                    try await store.publish(upload: grant.upload, owner: grant.owner, asset: asset)
                }
            }
            return self.receipt(for: asset, owner: grant.owner)
        } catch {
            // An erasure while the bytes came in discards them, so a later step finds none ("has no bytes") or fails in
            // the store: the answer is the erasure's (docs/PRIVACY.md), and what came in goes too.
            if error as? CloudError != RecordStore.uploadToErasedDatabase, await !self.isErased(grant.databaseID, logger) { throw error }
            try? await self.store.discard(upload: grant.upload)
            throw RecordStore.uploadToErasedDatabase
        }
    }

    /// The answer to a completed upload: its checksum, size and a receipt a record write presents.
    func receipt(for asset: StoredAsset, owner: String) -> Response {
        let receipt = self.capabilities.sign(
            .receipt, owner: owner, validFor: self.configuration.receiptLifetimeSeconds, size: asset.size, subject: asset.checksum)
        var json = JSONWriter()
        json.value(["singleFile": ["fileChecksum": .string(asset.checksum), "size": .int(asset.size), "receipt": .string(receipt)]])
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=UTF-8"], body: .init(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }

    func download(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        let owner = try context.parameters.require("owner")
        let checksum = try context.parameters.require("checksum")
        guard let signature = request.uri.queryParameters["s"].map(String.init),
            let grant = self.capabilities.verify(.download, signature), grant.owner == owner, grant.subject == checksum
        else { throw CloudError.accessDenied("this download URL is not valid") }
        guard grant.expires > self.capabilities.clock.now else {
            throw CloudError.accessDenied("this download URL has expired; fetch the record again")
        }
        guard let size = try await self.store.size(owner: owner, checksum: checksum) else { throw CloudError.notFound("no such asset") }
        let etag = "\"\(checksum)\""
        var headers: HTTPFields = [
            .eTag: etag, .cacheControl: "private, max-age=31536000, immutable", .acceptRanges: "bytes", .contentType: "application/octet-stream",
        ]
        if request.headers[.ifNoneMatch] == etag { return Response(status: .notModified, headers: headers) }
        var range: Range<Int64>? = nil
        if let header = request.headers[.range] {
            guard let parsed = Self.byteRange(header, size: size) else {
                headers[.contentRange] = "bytes */\(size)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            range = parsed
            headers[.contentRange] = "bytes \(parsed.lowerBound)-\(parsed.upperBound - 1)/\(size)"
        }
        let length = range.map { $0.upperBound - $0.lowerBound } ?? size
        headers[.contentLength] = String(length)
        let store = self.store
        let requested = range
        return Response(
            status: range == nil ? .ok : .partialContent, headers: headers,
            body: ResponseBody(contentLength: Int(length)) { writer in
                try await store.read(owner: owner, checksum: checksum, range: requested) { try await writer.write($0) }
                try await writer.finish(nil)
            })
    }

    /// One `bytes=a-b`, `bytes=a-` or `bytes=-n` range within `size`.
    static func byteRange(_ header: String, size: Int64) -> Range<Int64>? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let parts = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        if parts[0].isEmpty {
            guard let suffix = Int64(parts[1]), suffix > 0 else { return nil }
            return max(0, size - suffix)..<size
        }
        guard let start = Int64(parts[0]), start < size else { return nil }
        let end = parts[1].isEmpty ? size - 1 : min(Int64(parts[1]) ?? -1, size - 1)
        guard end >= start else { return nil }
        return start..<(end + 1)
    }
}
