import CloudCore
import Crypto
import Foundation
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import NIOCore
import _NIOFileSystem
import Synchronization

/// Assets on the local filesystem: `partial/<upload>` grows by appends; a completed upload is fsynced and renamed
/// to `blobs/<owner>/<checksum>`, so a referenced blob is always whole (rename is atomic on one filesystem).
public final class FileAssetStore: AssetStore {
    let root: String
    let fileSystem = FileSystem.shared
    /// SHA-256 state of uploads in progress, so hashing happens while bytes stream in. Lost on restart: then the
    /// partial file is hashed again from disk before it grows.
    private let hashing = Mutex<[String: (hasher: SHA256, length: Int64)]>([:])
    static let chunkLength: ByteCount = .kibibytes(256)
    /// A write found the filesystem full; `isFull` looks again until there is room.
    private let foundFull = Atomic<Bool>(false)
    /// Free space below which a store that found itself full still says so.
    static let roomEnough: Int64 = 16 << 20

    public init(root: String) throws {
        self.root = root
        for folder in ["partial", "blobs"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
    }

    func partialPath(_ upload: String) throws -> FilePath {
        try AssetNames.check(upload, what: "upload id")
        return FilePath(self.root + "/partial/" + upload)
    }

    func blobPath(owner: String, checksum: String) throws -> FilePath {
        try AssetNames.check(owner, what: "owner")
        return FilePath(self.root + "/blobs/" + owner + "/" + (try AssetNames.checksum(checksum)))
    }

    public func uploadedLength(of upload: String) async throws -> Int64 {
        let path = try self.partialPath(upload)
        guard let info = try await self.fileSystem.info(forFileAt: path) else { return 0 }
        return info.size
    }

    public func append<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, to upload: String, at offset: Int64, maxSize: Int64) async throws -> Int64
    where Chunks.Element == ByteBuffer {
        let path = try self.partialPath(upload)
        let current = try await self.uploadedLength(of: upload)
        guard offset == current else {
            throw CloudError(.conflict, "upload \(upload) has \(current) bytes; resume from offset \(current)")
        }
        var state = try await self.hashState(upload, length: current)
        var length = current
        do {
            try await self.refusingWhenFull(upload) {
                try await self.fileSystem.withFileHandle(forWritingAt: path, options: .modifyFile(createIfNecessary: true)) { handle in
                    for try await chunk in chunks {
                        guard length + Int64(chunk.readableBytes) <= maxSize else {
                            throw CloudError(.quotaExceeded, "the asset is larger than the \(maxSize)-byte limit")
                        }
                        try await handle.write(contentsOf: chunk.readableBytesView, toAbsoluteOffset: length)
                        chunk.withUnsafeReadableBytes { state.update(bufferPointer: $0) }
                        length += Int64(chunk.readableBytes)
                    }
                }
            }
        } catch let error as CloudError where error.code == .quotaExceeded {
            try await self.discard(upload: upload)
            throw error
        } catch {
            // The bytes that reached the file stay; the client resumes from what uploadedLength reports.
            self.hashing.withLock { $0[upload] = nil }
            throw error
        }
        self.hashing.withLock { $0[upload] = (state, length) }
        return length
    }

    /// The hasher for an upload of `length` bytes: kept from earlier appends, or rebuilt from the file.
    func hashState(_ upload: String, length: Int64) async throws -> SHA256 {
        if let kept = self.hashing.withLock({ $0[upload] }), kept.length == length { return kept.hasher }
        var hasher = SHA256()
        if length > 0 {
            try await self.fileSystem.withFileHandle(forReadingAt: try self.partialPath(upload)) { handle in
                for try await chunk in handle.readChunks(in: 0..<length, chunkLength: Self.chunkLength) {
                    chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                }
            }
        }
        return hasher
    }

    public func verify(upload: String, expectedChecksum: String?) async throws -> StoredAsset {
        let path = try self.partialPath(upload)
        let length = try await self.uploadedLength(of: upload)
        guard length > 0 else { throw CloudError.badRequest("upload \(upload) has no bytes") }
        let digest = Array(try await self.hashState(upload, length: length).finalize())
        let checksum = digest.hexString
        if let expectedChecksum, !AssetNames.matches(expectedChecksum, digest: digest, hex: checksum) {
            try await self.discard(upload: upload)
            throw AssetNames.mismatch(checksum, expected: expectedChecksum)
        }
        // Durable before it becomes visible.
        try await self.refusingWhenFull(upload) {
            try await self.fileSystem.withFileHandle(forReadingAndWritingAt: path, options: .modifyFile(createIfNecessary: false)) {
                try await $0.synchronize()
            }
        }
        return StoredAsset(checksum: checksum, size: length)
    }

    public func publish(upload: String, owner: String, asset: StoredAsset) async throws {
        let destination = try self.blobPath(owner: owner, checksum: asset.checksum)
        try await self.refusingWhenFull(upload) {
            try await self.fileSystem.createDirectory(at: destination.removingLastComponent(), withIntermediateDirectories: true, permissions: nil)
        }
        if try await self.fileSystem.info(forFileAt: destination) != nil {
            try await self.discard(upload: upload)  // The same bytes are already stored for this owner.
        } else {
            try await self.fileSystem.moveItem(at: try self.partialPath(upload), to: destination)
            self.hashing.withLock { $0[upload] = nil }
            // The rename lives in the directory: sync it too, so a power cut cannot lose the blob's name after its
            // row has committed.
            Self.synchronizeDirectory(destination.removingLastComponent().string)
        }
    }

    /// Runs a step of an upload. When the filesystem is full the upload is dropped (its partial file is what filled
    /// it, and would keep every other upload from the room it leaves) and the answer is TRY_AGAIN_LATER.
    private func refusingWhenFull<Result>(_ upload: String, _ step: () async throws -> Result) async throws -> Result {
        do {
            let result = try await step()
            self.foundFull.store(false, ordering: .relaxed)
            return result
        } catch where Self.meansFull(error) {
            self.foundFull.store(true, ordering: .relaxed)
            try? await self.discard(upload: upload)
            throw CloudError.assetStoreFull
        }
    }

    /// ENOSPC, or EDQUOT (a quota the operator set on the asset folder).
    static func meansFull(_ error: any Error) -> Bool {
        guard let error = error as? FileSystemError, let call = error.cause as? FileSystemError.SystemCallError else { return false }
        return call.errno.rawValue == ENOSPC || call.errno.rawValue == EDQUOT
    }

    /// Whether a write found the filesystem full and it still has less than `roomEnough` free.
    public var isFull: Bool {
        guard self.foundFull.load(ordering: .relaxed) else { return false }
        var stats = statvfs()
        guard statvfs(self.root, &stats) == 0, Int64(stats.f_bavail) * Int64(stats.f_frsize) >= Self.roomEnough else { return true }
        self.foundFull.store(false, ordering: .relaxed)
        return false
    }

    /// fsync on a directory (best effort: a filesystem that cannot sync directories keeps its own guarantees).
    static func synchronizeDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        _ = close(descriptor)
    }

    public func discard(upload: String) async throws {
        self.hashing.withLock { $0[upload] = nil }
        _ = try await self.fileSystem.removeItem(at: try self.partialPath(upload), strategy: .platformDefault)
    }

    public func discardUploads(prefix: String) async throws -> Int {
        let names = try FileManager.default.contentsOfDirectory(atPath: self.root + "/partial").filter { $0.hasPrefix(prefix) }
        for name in names { try await self.discard(upload: name) }
        return names.count
    }

    public func size(owner: String, checksum: String) async throws -> Int64? {
        try await self.fileSystem.info(forFileAt: try self.blobPath(owner: owner, checksum: checksum))?.size
    }

    public func read(owner: String, checksum: String, range: Range<Int64>?, to write: (ByteBuffer) async throws -> Void) async throws {
        let path = try self.blobPath(owner: owner, checksum: checksum)
        guard let size = try await self.fileSystem.info(forFileAt: path)?.size else { throw CloudError.notFound("no such asset") }
        let range = range ?? 0..<size
        guard range.lowerBound >= 0, range.upperBound <= size else { throw CloudError.badRequest("range outside the asset") }
        try await self.fileSystem.withFileHandle(forReadingAt: path) { handle in
            for try await chunk in handle.readChunks(in: range, chunkLength: Self.chunkLength) { try await write(chunk) }
        }
    }

    public func remove(owner: String, checksum: String) async throws {
        _ = try await self.fileSystem.removeItem(at: try self.blobPath(owner: owner, checksum: checksum), strategy: .platformDefault)
    }

    @discardableResult
    public func removePartialUploads(olderThan age: Double) async throws -> Int {
        let folder = self.root + "/partial"
        let cutoff = Date().addingTimeInterval(-age)
        var removed = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            let attributes = try? FileManager.default.attributesOfItem(atPath: folder + "/" + name)
            guard let modified = attributes?[.modificationDate] as? Date, modified < cutoff else { continue }
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
            self.hashing.withLock { $0[name] = nil }
            removed += 1
        }
        return removed
    }

    public func blobs(olderThan age: Double) async throws -> [(owner: String, checksum: String)] {
        let folder = self.root + "/blobs"
        let cutoff = Date().addingTimeInterval(-age)
        var found: [(owner: String, checksum: String)] = []
        for owner in try FileManager.default.contentsOfDirectory(atPath: folder) {
            for checksum in (try? FileManager.default.contentsOfDirectory(atPath: folder + "/" + owner)) ?? [] {
                let attributes = try? FileManager.default.attributesOfItem(atPath: folder + "/" + owner + "/" + checksum)
                guard let modified = attributes?[.modificationDate] as? Date, modified < cutoff else { continue }
                found.append((owner, checksum))
            }
        }
        return found
    }
}
