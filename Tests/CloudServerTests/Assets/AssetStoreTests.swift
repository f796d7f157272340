import CloudAssets
import CloudCore
import Crypto
import Foundation
import Logging
import NIOCore
import Testing

/// The `AssetStore` contract, run against the store `STADIUMCLOUD_TEST_ASSETS` names (scripts/test sets an
/// `s3://` bucket on a moto server for its second asset run) or else a `FileAssetStore` in a temporary folder.
@Suite(.bounded) final class AssetStoreTests {
    let location = TestAssets.location()
    let owner = "_0123456789abcdef0123456789abcdef"

    deinit { TestAssets.remove(self.location) }

    /// A store on this suite's location; a second call stands for another process (or a restart).
    func makeStore() throws -> any AssetStore { try openAssetStore(self.location, logger: Logger(label: "test")) }

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

    func read(_ store: any AssetStore, _ checksum: String, range: Range<Int64>? = nil) async throws -> [UInt8] {
        var out: [UInt8] = []
        try await store.read(owner: self.owner, checksum: checksum, range: range) { out += Array($0.readableBytesView) }
        return out
    }

    @Test func streamsVerifiesAndStoresAtomically() async throws {
        let store = try self.makeStore()
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

    /// An erased account's uploads in progress go at once, by their ids' prefix; another owner's stay.
    @Test func uploadsInProgressAreDiscardedByPrefix() async throws {
        let store = try self.makeStore()
        for upload in ["db7-a", "db7-b", "db70-c"] { _ = try await store.append(Self.chunks(Self.bytes(1_000)), to: upload, at: 0, maxSize: 10_000) }
        #expect(try await store.discardUploads(prefix: "db7-") == 2)
        #expect(try await store.uploadedLength(of: "db7-a") == 0)
        #expect(try await store.uploadedLength(of: "db7-b") == 0)
        #expect(try await store.uploadedLength(of: "db70-c") == 1_000)
        #expect(try await store.discardUploads(prefix: "db7-") == 0)
    }

    @Test func anInterruptedUploadResumesAfterARestart() async throws {
        let data = Self.bytes(1_000_000, seed: 7)
        let first = try self.makeStore()
        _ = try await first.append(Self.chunks(Array(data[..<400_000])), to: "resume", at: 0, maxSize: 2_000_000)
        // A new process: the hash state is gone, the bytes on disk are not.
        let second = try self.makeStore()
        let offset = try await second.uploadedLength(of: "resume")
        #expect(offset == 400_000)
        await #expect(throws: CloudError.self) { try await second.append(Self.chunks([1]), to: "resume", at: 10, maxSize: 2_000_000) }
        _ = try await second.append(Self.chunks(Array(data[Int(offset)...])), to: "resume", at: offset, maxSize: 2_000_000)
        let asset = try await second.complete(upload: "resume", owner: self.owner, expectedChecksum: nil)
        #expect(asset.checksum == Self.sha256(data))
        #expect(try await self.read(second, asset.checksum) == data)
    }

    @Test func aChecksumMismatchStoresNothing() async throws {
        let store = try self.makeStore()
        let data = Self.bytes(1000)
        _ = try await store.append(Self.chunks(data), to: "bad", at: 0, maxSize: 10_000)
        await #expect { try await store.complete(upload: "bad", owner: self.owner, expectedChecksum: String(repeating: "0", count: 64)) } throws: {
            ($0 as? CloudError)?.reason.contains("checksum mismatch") == true
        }
        #expect(try await store.uploadedLength(of: "bad") == 0)
        #expect(try await store.size(owner: self.owner, checksum: Self.sha256(data)) == nil)
    }

    @Test func tooLargeIsQuotaExceededAndDropsTheUpload() async throws {
        let store = try self.makeStore()
        await #expect { try await store.append(Self.chunks(Self.bytes(300_000)), to: "big", at: 0, maxSize: 200_000) } throws: {
            ($0 as? CloudError)?.code == .quotaExceeded
        }
        #expect(try await store.uploadedLength(of: "big") == 0)
    }

    @Test func namesCannotEscapeTheStore() async throws {
        let store = try self.makeStore()
        for name in ["../x", "a/b", "", String(repeating: "a", count: 200)] {
            await #expect(throws: CloudError.self) { try await store.uploadedLength(of: name) }
        }
        await #expect(throws: CloudError.self) { try await store.size(owner: "../../etc", checksum: String(repeating: "a", count: 64)) }
    }

    @Test func abandonedPartialsAreCleanedUp() async throws {
        let store = try self.makeStore()
        _ = try await store.append(Self.chunks(Self.bytes(10)), to: "old", at: 0, maxSize: 100)
        #expect(try await store.removePartialUploads(olderThan: 3600) == 0)
        #expect(try await store.removePartialUploads(olderThan: -1) == 1)
        #expect(try await store.uploadedLength(of: "old") == 0)
    }

    @Test func aLargeUploadResumedAtOddOffsetsInAnotherProcess() async throws {
        // Over two 5 MiB parts with odd boundaries: parts, tails and the hash read back all take part.
        let data = Self.bytes(11 * 1024 * 1024 + 123, seed: 9)
        let first = try self.makeStore()
        #expect(try await first.append(Self.chunks(Array(data[..<3_000_001])), to: "large", at: 0, maxSize: 20_000_000) == 3_000_001)
        #expect(try await first.append(Self.chunks(Array(data[3_000_001..<7_000_000])), to: "large", at: 3_000_001, maxSize: 20_000_000) == 7_000_000)
        let second = try self.makeStore()
        #expect(try await second.uploadedLength(of: "large") == 7_000_000)
        _ = try await second.append(Self.chunks(Array(data[7_000_000...])), to: "large", at: 7_000_000, maxSize: 20_000_000)
        let asset = try await first.complete(upload: "large", owner: self.owner, expectedChecksum: Self.sha256(data))
        #expect(asset == StoredAsset(checksum: Self.sha256(data), size: Int64(data.count)))
        #expect(try await second.size(owner: self.owner, checksum: asset.checksum) == Int64(data.count))
        #expect(try await self.read(second, asset.checksum, range: 5_242_870..<5_242_890) == Array(data[5_242_870..<5_242_890]))
        #expect(try await self.read(second, asset.checksum) == data)
        #expect(try await second.uploadedLength(of: "large") == 0)
    }

    @Test func theCollectorSeesBlobsAndRemovesThem() async throws {
        let store = try self.makeStore()
        let data = Self.bytes(5000, seed: 3)
        _ = try await store.append(Self.chunks(data), to: "gc", at: 0, maxSize: 10_000)
        let asset = try await store.complete(upload: "gc", owner: self.owner, expectedChecksum: nil)
        #expect(try await store.blobs(olderThan: 3600).isEmpty)
        let old = try await store.blobs(olderThan: -1)
        #expect(old.map(\.owner) == [self.owner] && old.map(\.checksum) == [asset.checksum])
        try await store.remove(owner: self.owner, checksum: asset.checksum)
        #expect(try await store.size(owner: self.owner, checksum: asset.checksum) == nil)
        await #expect { try await self.read(store, asset.checksum) } throws: { ($0 as? CloudError)?.code == .notFound }
    }
}

/// A full disk under the asset folder: the upload is dropped (its partial file is what filled the disk) and answered
/// TRY_AGAIN_LATER, so no later upload of anyone finds the disk still full of it. `/dev/full` answers every write with
/// ENOSPC; the `disk-full` fault scenario fills a real small filesystem.
@Suite(.bounded) struct FullAssetDiskTests {
    @Test func anUploadThatFindsTheDiskFullIsDroppedAndAnsweredTryAgainLater() async throws {
        let root = NSTemporaryDirectory() + "stadiumcloud-full-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: root) }
        let store = try FileAssetStore(root: root)
        try FileManager.default.createSymbolicLink(atPath: root + "/partial/upload1", withDestinationPath: "/dev/full")
        await #expect(throws: CloudError.assetStoreFull) {
            _ = try await store.append(AssetStoreTests.chunks(AssetStoreTests.bytes(100_000)), to: "upload1", at: 0, maxSize: 1 << 20)
        }
        #expect(!FileManager.default.fileExists(atPath: root + "/partial/upload1"), "the partial upload is dropped")
        #expect(CloudError.assetStoreFull.code == .tryAgainLater && CloudError.assetStoreFull.retryAfter == 60)
        // This folder's filesystem has room: the store does not call itself full.
        #expect(!store.isFull)
        let stored = try await store.append(AssetStoreTests.chunks(AssetStoreTests.bytes(1_000)), to: "upload2", at: 0, maxSize: 1 << 20)
        #expect(stored == 1_000)
    }
}
