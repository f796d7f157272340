import CloudCore
import Foundation
import Logging
import NIOCore

/// An asset the store holds: its SHA-256 (lowercase hex) and size in bytes.
public struct StoredAsset: Sendable, Hashable {
    public var checksum: String
    public var size: Int64

    public init(checksum: String, size: Int64) {
        self.checksum = checksum
        self.size = size
    }
}

/// Where asset bytes live: partial uploads that grow by appends, then content-addressed blobs per owner. The
/// filesystem implementation is `FileAssetStore`; `S3AssetStore` keeps them in an S3-compatible bucket that several
/// server processes share. Errors a client can cause are `CloudError`s.
public protocol AssetStore: Sendable {
    /// How many bytes of `upload` the store has (0 for an upload it has never seen): where a client resumes.
    func uploadedLength(of upload: String) async throws -> Int64

    /// Appends `chunks` to `upload`, which must be exactly `offset` bytes long, without holding them in memory.
    /// Stops with QUOTA_EXCEEDED (and drops the upload) once it would pass `maxSize`. Returns the new length.
    func append<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks, to upload: String, at offset: Int64, maxSize: Int64) async throws -> Int64
    where Chunks.Element == ByteBuffer

    /// Drops an upload in progress (a client starting over).
    func discard(upload: String) async throws

    /// Drops every upload in progress whose id starts with `prefix`: an erased account's (upload ids begin with their
    /// owner, `db42-…`). Returns how many went.
    @discardableResult
    func discardUploads(prefix: String) async throws -> Int

    /// Checks a finished `upload`: SHA-256 over the whole file (and `expectedChecksum`, hex or base64, when
    /// given), then makes it durable. A mismatch drops the upload.
    func verify(upload: String, expectedChecksum: String?) async throws -> StoredAsset

    /// Moves a verified upload atomically into `owner`'s blobs; the same bytes stored twice are kept once.
    func publish(upload: String, owner: String, asset: StoredAsset) async throws

    /// The size of `owner`'s blob with `checksum`, or nil.
    func size(owner: String, checksum: String) async throws -> Int64?

    /// Streams `range` (or all) of a blob to `write`, in chunks.
    func read(owner: String, checksum: String, range: Range<Int64>?, to write: (ByteBuffer) async throws -> Void) async throws

    /// Removes a blob (the collector calls this once no record references it).
    func remove(owner: String, checksum: String) async throws

    /// Drops partial uploads untouched for longer than `age` seconds (abandoned or cut off by a crash).
    @discardableResult
    func removePartialUploads(olderThan age: Double) async throws -> Int

    /// Blobs whose bytes were last written more than `age` seconds ago, as (owner, checksum): the collector
    /// compares them with the database to find bytes a crash left without a row.
    func blobs(olderThan age: Double) async throws -> [(owner: String, checksum: String)]

    /// Whether the store found itself full and still is (for `/ready` and `/metrics`).
    var isFull: Bool { get }
}

extension AssetStore {
    /// `verify` then `publish`, for callers that need no lock between them.
    public func complete(upload: String, owner: String, expectedChecksum: String?) async throws -> StoredAsset {
        let asset = try await self.verify(upload: upload, expectedChecksum: expectedChecksum)
        try await self.publish(upload: upload, owner: owner, asset: asset)
        return asset
    }
}

/// The names every store turns into paths or keys, checked the same way.
enum AssetNames {
    /// Upload ids and owners: letters, digits, `_` and `-` only, 1 to 128 bytes.
    static func check(_ name: String, what: String) throws {
        guard (1...128).contains(name.utf8.count),
            name.utf8.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else {
            throw CloudError.badRequest("\(what) \(name.debugDescription) is not valid")
        }
    }

    /// A SHA-256 as 64 hex digits, lowercased.
    static func checksum(_ checksum: String) throws -> String {
        guard checksum.utf8.count == 64, checksum.allSatisfy(\.isHexDigit) else {
            throw CloudError.badRequest("asset checksum must be 64 hex digits")
        }
        return checksum.lowercased()
    }

    /// A client checksum, as hex or as base64 of the SHA-256.
    static func matches(_ given: String, digest: [UInt8], hex: String) -> Bool {
        given.lowercased() == hex || Data(base64Encoded: given).map(Array.init) == digest
    }

    static func mismatch(_ checksum: String, expected: String) -> CloudError {
        CloudError.badRequest("checksum mismatch: the uploaded bytes have SHA-256 \(checksum), not \(expected); upload them again")
    }
}

extension UInt8 {
    fileprivate var isASCIIAlphanumeric: Bool { (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self) }
}

/// The store for an asset location: `s3://bucket[/prefix]?endpoint=…` (keys from `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY`), or else a folder for `FileAssetStore`.
public func openAssetStore(
    _ location: String, environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger
) throws -> any AssetStore {
    guard let bucket = try S3Location.parse(location, environment: environment) else { return try FileAssetStore(root: location) }
    guard let credentials = AWSCredentials.fromEnvironment(environment) else {
        throw CloudError.badRequest("s3:// assets need AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment")
    }
    return S3AssetStore(location: bucket, credentials: credentials, logger: logger)
}

extension AssetStore {
    /// A bucket does not fill up the way a disk does.
    public var isFull: Bool { false }
}

extension CloudError {
    /// The asset store has no room. Not QUOTA_EXCEEDED: CloudKit's clients read that as the person's own storage
    /// being full, and stop; a full disk is the operator's to fix, and the upload works again once there is room.
    public static let assetStoreFull = CloudError(
        .tryAgainLater, "the asset store is full; nothing was stored: try again later", retryAfter: 60)
}
