import AsyncHTTPClient
import CloudCore
import Crypto
import Foundation
import Logging
import NIOCore
import Synchronization

/// Assets in an S3-compatible bucket, shared by every server process. All upload state lives in the bucket, so
/// any process can resume an upload another one started:
/// - `uploads/<upload>/whole` is the upload's multipart upload; full parts (`partSize` bytes) go up as bytes
///   stream in, so memory per upload stays at one part.
/// - `uploads/<upload>/tail-<offset>` holds the bytes after the last full part; it counts only when `offset`
///   equals the parts' total, so a crash between writing a part and replacing the tail never counts bytes twice.
/// - `verify` sends the tail as the last part and completes the upload into `whole`; `publish` copies `whole` to
///   the content-addressed `blobs/<owner>/<sha256>` (S3 has no rename; each object appears whole or not at all).
public final class S3AssetStore: AssetStore {
    let bucket: S3Bucket
    /// SHA-256 state of uploads this process is receiving; another process (or a restart) re-reads the bytes.
    private let hashing = Mutex<[String: (hasher: SHA256, length: Int64)]>([:])

    public init(location: S3Location, credentials: AWSCredentials, logger: Logger) {
        self.bucket = S3Bucket(location: location, credentials: credentials, http: Self.http, logger: logger)
    }

    /// One client for every store, for the process's life (so never shut down). A bucket that cannot be reached
    /// fails the request at once (TRY_AGAIN_LATER) instead of retrying the connection until the request's deadline.
    static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(5)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    var partSize: Int { self.bucket.location.partSize }

    func folder(_ upload: String) throws -> String {
        try AssetNames.check(upload, what: "upload id")
        return "uploads/" + upload + "/"
    }

    func blobKey(owner: String, checksum: String) throws -> String {
        try AssetNames.check(owner, what: "owner")
        return "blobs/" + owner + "/" + (try AssetNames.checksum(checksum))
    }

    /// What the bucket holds of one upload.
    struct UploadState {
        var folder: String
        /// The size of the completed object, once `verify` made it.
        var whole: Int64?
        var multipart: String?
        var parts: [S3Bucket.Part] = []
        var tailSize: Int64?
        /// Every object under the upload's folder (stale tails included), for clean-up.
        var objects: [String] = []

        var partsLength: Int64 { self.parts.reduce(0) { $0 + $1.size } }
        var length: Int64 { self.whole ?? self.partsLength + (self.tailSize ?? 0) }
        var wholeKey: String { self.folder + "whole" }
        var tailKey: String { self.folder + "tail-\(self.partsLength)" }
    }

    func state(of upload: String) async throws -> UploadState {
        var state = UploadState(folder: try self.folder(upload))
        let objects = try await self.bucket.list(state.folder)
        state.objects = objects.map(\.key)
        if let whole = objects.first(where: { $0.key == state.wholeKey }) {
            state.whole = whole.size
            return state
        }
        // Two processes racing to start the same upload would make two; the oldest one is the upload.
        if let multipart = try await self.bucket.multipartUploads(state.wholeKey).first(where: { $0.key == state.wholeKey }) {
            state.multipart = multipart.id
            state.parts = try await self.bucket.parts(state.wholeKey, upload: multipart.id)
        }
        state.tailSize = objects.first(where: { $0.key == state.tailKey })?.size
        return state
    }

    public func uploadedLength(of upload: String) async throws -> Int64 {
        try await self.state(of: upload).length
    }

    public func append<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, to upload: String, at offset: Int64, maxSize: Int64) async throws -> Int64
    where Chunks.Element == ByteBuffer {
        var state = try await self.state(of: upload)
        guard state.whole == nil else { throw CloudError(.conflict, "upload \(upload) is already complete") }
        guard offset == state.length else {
            throw CloudError(.conflict, "upload \(upload) has \(state.length) bytes; resume from offset \(state.length)")
        }
        var hasher = self.hashing.withLock { $0[upload] }.flatMap { $0.length == offset ? $0.hasher : nil }
        let oldTail = state.tailSize == nil ? nil : state.tailKey
        var pending = ByteBuffer()
        if let oldTail { pending = try await self.bucket.get(oldTail, limit: self.partSize) ?? ByteBuffer() }
        var length = offset
        do {
            for try await chunk in chunks {
                guard length + Int64(chunk.readableBytes) <= maxSize else {
                    throw CloudError(.quotaExceeded, "the asset is larger than the \(maxSize)-byte limit")
                }
                chunk.withUnsafeReadableBytes { hasher?.update(bufferPointer: $0) }
                pending.writeImmutableBuffer(chunk)
                length += Int64(chunk.readableBytes)
                while pending.readableBytes >= self.partSize {
                    try await self.sendPart(pending.readSlice(length: self.partSize)!, of: &state)
                    pending.discardReadBytes()
                }
            }
        } catch let error as CloudError where error.code == .quotaExceeded {
            try await self.discard(upload: upload)
            throw error
        } catch {
            // Keep what arrived, as the file store keeps what reached the disk: the client resumes after it.
            self.hashing.withLock { $0[upload] = nil }
            try? await self.replaceTail(oldTail, with: pending, state: state)
            throw error
        }
        try await self.replaceTail(oldTail, with: pending, state: state)
        self.hashing.withLock { $0[upload] = hasher.map { ($0, length) } }
        return length
    }

    func sendPart(_ bytes: ByteBuffer, of state: inout UploadState) async throws {
        if state.multipart == nil { state.multipart = try await self.bucket.startMultipartUpload(state.wholeKey) }
        let number = (state.parts.last?.number ?? 0) + 1
        let etag = try await self.bucket.uploadPart(state.wholeKey, upload: state.multipart!, number: number, bytes)
        state.parts.append(S3Bucket.Part(number: number, size: Int64(bytes.readableBytes), etag: etag, modified: Date()))
    }

    /// Writes the bytes after the last full part under the tail key for the current parts' total, then drops the
    /// tail it replaces (written first, so a crash in between leaves a stale tail, never a missing one).
    func replaceTail(_ oldTail: String?, with pending: ByteBuffer, state: UploadState) async throws {
        if pending.readableBytes > 0 { try await self.bucket.put(state.tailKey, pending) }
        if let oldTail, oldTail != state.tailKey { try await self.bucket.delete(oldTail) }
    }

    public func discard(upload: String) async throws {
        self.hashing.withLock { $0[upload] = nil }
        let folder = try self.folder(upload)
        for multipart in try await self.bucket.multipartUploads(folder) where multipart.key.hasPrefix(folder) {
            try await self.bucket.abortMultipartUpload(multipart.key, upload: multipart.id)
        }
        for object in try await self.bucket.list(folder) { try await self.bucket.delete(object.key) }
    }

    public func discardUploads(prefix: String) async throws -> Int {
        try AssetNames.check(prefix, what: "upload id prefix")
        var uploads = Set<String>()
        for object in try await self.bucket.list("uploads/" + prefix) { uploads.insert(String(object.key.dropFirst("uploads/".count).prefix { $0 != "/" })) }
        for multipart in try await self.bucket.multipartUploads("uploads/" + prefix) {
            uploads.insert(String(multipart.key.dropFirst("uploads/".count).prefix { $0 != "/" }))
        }
        for upload in uploads { try await self.discard(upload: upload) }
        return uploads.count
    }

    public func verify(upload: String, expectedChecksum: String?) async throws -> StoredAsset {
        var state = try await self.state(of: upload)
        let length = state.length
        guard length > 0 else { throw CloudError.badRequest("upload \(upload) has no bytes") }
        if state.whole == nil {
            if state.multipart == nil {
                try await self.bucket.copy(state.tailKey, to: state.wholeKey)
            } else {
                if state.tailSize != nil, let tail = try await self.bucket.get(state.tailKey, limit: self.partSize) {
                    try await self.sendPart(tail, of: &state)
                }
                try await self.bucket.completeMultipartUpload(state.wholeKey, upload: state.multipart!, parts: state.parts)
            }
            for key in state.objects where key != state.wholeKey { try await self.bucket.delete(key) }
        }
        let digest = Array(try await self.hasher(upload, state: state, length: length).finalize())
        let checksum = digest.hexString
        if let expectedChecksum, !AssetNames.matches(expectedChecksum, digest: digest, hex: checksum) {
            try await self.discard(upload: upload)
            throw AssetNames.mismatch(checksum, expected: expectedChecksum)
        }
        return StoredAsset(checksum: checksum, size: length)
    }

    /// The hash of a completed upload: kept from this process's appends, or read back from the bucket.
    func hasher(_ upload: String, state: UploadState, length: Int64) async throws -> SHA256 {
        if let kept = self.hashing.withLock({ $0[upload] }), kept.length == length { return kept.hasher }
        var hasher = SHA256()
        try await self.bucket.stream(state.wholeKey, range: nil) { chunk in chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) } }
        return hasher
    }

    public func publish(upload: String, owner: String, asset: StoredAsset) async throws {
        let destination = try self.blobKey(owner: owner, checksum: asset.checksum)
        // The same bytes already stored for this owner are kept once.
        if try await self.bucket.size(of: destination) == nil {
            try await self.bucket.copy(UploadState(folder: try self.folder(upload)).wholeKey, to: destination)
        }
        try await self.discard(upload: upload)
    }

    public func size(owner: String, checksum: String) async throws -> Int64? {
        try await self.bucket.size(of: try self.blobKey(owner: owner, checksum: checksum))
    }

    public func read(owner: String, checksum: String, range: Range<Int64>?, to write: (ByteBuffer) async throws -> Void) async throws {
        let key = try self.blobKey(owner: owner, checksum: checksum)
        if let range {
            guard let size = try await self.bucket.size(of: key) else { throw CloudError.notFound("no such asset") }
            guard range.lowerBound >= 0, range.upperBound <= size else { throw CloudError.badRequest("range outside the asset") }
            guard !range.isEmpty else { return }
        }
        try await self.bucket.stream(key, range: range, to: write)
    }

    public func remove(owner: String, checksum: String) async throws {
        try await self.bucket.delete(try self.blobKey(owner: owner, checksum: checksum))
    }

    @discardableResult
    public func removePartialUploads(olderThan age: Double) async throws -> Int {
        let cutoff = Date().addingTimeInterval(-age)
        // The last sign of life of each upload: its objects' and its multipart upload's times.
        var latest: [String: Date] = [:]
        func upload(of key: String) -> String { String(key.dropFirst("uploads/".count).prefix { $0 != "/" }) }
        func saw(_ key: String, at date: Date) { latest[upload(of: key)] = max(latest[upload(of: key)] ?? .distantPast, date) }
        for object in try await self.bucket.list("uploads/") { saw(object.key, at: object.modified) }
        for multipart in try await self.bucket.multipartUploads("uploads/") {
            saw(multipart.key, at: multipart.initiated)
            if latest[upload(of: multipart.key)]! < cutoff {
                for part in try await self.bucket.parts(multipart.key, upload: multipart.id) { saw(multipart.key, at: part.modified) }
            }
        }
        var removed = 0
        for (upload, date) in latest where date < cutoff {
            guard (try? AssetNames.check(upload, what: "upload id")) != nil else { continue }
            try await self.discard(upload: upload)
            removed += 1
        }
        return removed
    }

    public func blobs(olderThan age: Double) async throws -> [(owner: String, checksum: String)] {
        let cutoff = Date().addingTimeInterval(-age)
        return try await self.bucket.list("blobs/").compactMap { object in
            let parts = object.key.split(separator: "/")
            guard parts.count == 3, object.modified < cutoff else { return nil }
            return (String(parts[1]), String(parts[2]))
        }
    }
}
