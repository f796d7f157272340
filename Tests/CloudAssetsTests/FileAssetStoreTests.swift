import CloudAssets
import CloudCore
import Crypto
import Foundation
import NIOCore
import Testing

@Suite final class FileAssetStoreTests {
    let root = NSTemporaryDirectory() + "stadiumcloud-assets-" + UUID().uuidString
    let owner = "_0123456789abcdef0123456789abcdef"

    deinit { try? FileManager.default.removeItem(atPath: self.root) }

    /// Deterministic bytes, split into chunks as a network would deliver them.
    static func bytes(_ count: Int, seed: UInt8 = 1) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } }
    static func chunks(_ bytes: [UInt8], size: Int = 65_536) -> AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            for start in stride(from: 0, to: bytes.count, by: size) {
                continuation.yield(ByteBuffer(bytes: bytes[start..<min(start + size, bytes.count)]))
            }
            continuation.finish()
        }
    }
    static func sha256(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    func read(_ store: FileAssetStore, _ checksum: String, range: Range<Int64>? = nil) async throws -> [UInt8] {
        var out: [UInt8] = []
        try await store.read(owner: self.owner, checksum: checksum, range: range) { out += Array($0.readableBytesView) }
        return out
    }

    @Test func streamsVerifiesAndStoresAtomically() async throws {
        let store = try FileAssetStore(root: self.root)
        let data = Self.bytes(3_000_000)
        #expect(try await store.append(Self.chunks(data), to: "up1", at: 0, maxSize: 10_000_000) == 3_000_000)
        let asset = try await store.complete(upload: "up1", owner: self.owner, expectedChecksum: Self.sha256(data))
        #expect(asset == StoredAsset(checksum: Self.sha256(data), size: 3_000_000))
        #expect(try await store.uploadedLength(of: "up1") == 0, "the partial file was moved, not copied")
        #expect(try await self.read(store, asset.checksum) == data)
        #expect(try await self.read(store, asset.checksum, range: 10..<20) == Array(data[10..<20]))
        // Base64 checksums (CloudKit style) are accepted too; the same bytes again are stored once.
        _ = try await store.append(Self.chunks(data), to: "up2", at: 0, maxSize: 10_000_000)
        let base64 = Data(SHA256.hash(data: data)).base64EncodedString()
        #expect(try await store.complete(upload: "up2", owner: self.owner, expectedChecksum: base64) == asset)
        #expect(try await store.uploadedLength(of: "up2") == 0)
    }

    @Test func anInterruptedUploadResumesAfterARestart() async throws {
        let data = Self.bytes(1_000_000, seed: 7)
        let first = try FileAssetStore(root: self.root)
        _ = try await first.append(Self.chunks(Array(data[..<400_000])), to: "resume", at: 0, maxSize: 2_000_000)
        // A new process: the hash state is gone, the bytes on disk are not.
        let second = try FileAssetStore(root: self.root)
        let offset = try await second.uploadedLength(of: "resume")
        #expect(offset == 400_000)
        await #expect(throws: CloudError.self) { try await second.append(Self.chunks([1]), to: "resume", at: 10, maxSize: 2_000_000) }
        _ = try await second.append(Self.chunks(Array(data[Int(offset)...])), to: "resume", at: offset, maxSize: 2_000_000)
        let asset = try await second.complete(upload: "resume", owner: self.owner, expectedChecksum: nil)
        #expect(asset.checksum == Self.sha256(data))
        #expect(try await self.read(second, asset.checksum) == data)
    }

    @Test func aChecksumMismatchStoresNothing() async throws {
        let store = try FileAssetStore(root: self.root)
        let data = Self.bytes(1000)
        _ = try await store.append(Self.chunks(data), to: "bad", at: 0, maxSize: 10_000)
        await #expect { try await store.complete(upload: "bad", owner: self.owner, expectedChecksum: String(repeating: "0", count: 64)) } throws: {
            ($0 as? CloudError)?.reason.contains("checksum mismatch") == true
        }
        #expect(try await store.uploadedLength(of: "bad") == 0)
        #expect(try await store.size(owner: self.owner, checksum: Self.sha256(data)) == nil)
    }

    @Test func tooLargeIsQuotaExceededAndDropsTheUpload() async throws {
        let store = try FileAssetStore(root: self.root)
        await #expect { try await store.append(Self.chunks(Self.bytes(300_000)), to: "big", at: 0, maxSize: 200_000) } throws: {
            ($0 as? CloudError)?.code == .quotaExceeded
        }
        #expect(try await store.uploadedLength(of: "big") == 0)
    }

    @Test func namesCannotEscapeTheStore() async throws {
        let store = try FileAssetStore(root: self.root)
        for name in ["../x", "a/b", "", String(repeating: "a", count: 200)] {
            await #expect(throws: CloudError.self) { try await store.uploadedLength(of: name) }
        }
        await #expect(throws: CloudError.self) { try await store.size(owner: "../../etc", checksum: String(repeating: "a", count: 64)) }
    }

    @Test func abandonedPartialsAreCleanedUp() async throws {
        let store = try FileAssetStore(root: self.root)
        _ = try await store.append(Self.chunks(Self.bytes(10)), to: "old", at: 0, maxSize: 100)
        #expect(try await store.removePartialUploads(olderThan: 3600) == 0)
        #expect(try await store.removePartialUploads(olderThan: -1) == 1)
        #expect(try await store.uploadedLength(of: "old") == 0)
    }
}
