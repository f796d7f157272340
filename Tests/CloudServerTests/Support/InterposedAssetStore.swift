import CloudAssets
import NIOCore
import Synchronization

/// An asset store that runs a test's step once an upload's bytes are stored and before the upload completes: the
/// moment an erasure lands on an upload whose body is still arriving, which a test client that sends its body whole
/// cannot reach. Everything else is the wrapped store's.
final class InterposedAssetStore: AssetStore {
    let base: any AssetStore
    private let afterBytes = Mutex<(@Sendable () async throws -> Void)?>(nil)

    init(_ base: any AssetStore) { self.base = base }

    /// Runs `step` after the next body's bytes are stored, once.
    func once(afterBytes step: @escaping @Sendable () async throws -> Void) { self.afterBytes.withLock { $0 = step } }

    func append<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, to upload: String, at offset: Int64, maxSize: Int64) async throws -> Int64
    where Chunks.Element == ByteBuffer {
        let length = try await self.base.append(chunks, to: upload, at: offset, maxSize: maxSize)
        let step = self.afterBytes.withLock { step in
            defer { step = nil }
            return step
        }
        try await step?()
        return length
    }

    func uploadedLength(of upload: String) async throws -> Int64 { try await self.base.uploadedLength(of: upload) }
    func discard(upload: String) async throws { try await self.base.discard(upload: upload) }
    func discardUploads(prefix: String) async throws -> Int { try await self.base.discardUploads(prefix: prefix) }
    func verify(upload: String, expectedChecksum: String?) async throws -> StoredAsset {
        try await self.base.verify(upload: upload, expectedChecksum: expectedChecksum)
    }
    func publish(upload: String, owner: String, asset: StoredAsset) async throws {
        try await self.base.publish(upload: upload, owner: owner, asset: asset)
    }
    func size(owner: String, checksum: String) async throws -> Int64? { try await self.base.size(owner: owner, checksum: checksum) }
    func read(owner: String, checksum: String, range: Range<Int64>?, to write: (ByteBuffer) async throws -> Void) async throws {
        try await self.base.read(owner: owner, checksum: checksum, range: range, to: write)
    }
    func remove(owner: String, checksum: String) async throws { try await self.base.remove(owner: owner, checksum: checksum) }
    func removePartialUploads(olderThan age: Double) async throws -> Int { try await self.base.removePartialUploads(olderThan: age) }
    func blobs(olderThan age: Double) async throws -> [(owner: String, checksum: String)] { try await self.base.blobs(olderThan: age) }
    var isFull: Bool { self.base.isFull }
}
