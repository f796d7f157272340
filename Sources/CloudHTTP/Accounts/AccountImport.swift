import CloudAssets
import CloudCore
import CloudPostgres
import CloudRuntime
import Crypto
import Foundation
import Logging
import Metrics
import NIOCore

/// What an import wrote.
public struct AccountImportSummary: Sendable, Equatable {
    public var zones = 0
    public var records = 0
    public var assets = 0
    /// Records of public databases in the archive (the person's trip polls and votes), not written back: shared zones
    /// are not restored from one person's copy.
    public var publicRecordsSkipped = 0
}

/// Reads an account export (`AccountArchive`) into the account named `name`, which must hold nothing yet: its zones,
/// its records with the same names, types and fields, and its assets' bytes (docs/PRIVACY.md, "Export"). All or
/// nothing: the archive is checked whole first (every file against its manifest, the manifest against this server's
/// MAC unless `trustUnsigned`, every page parsed, every asset a record references present), its assets' bytes are
/// staged as uploads, and then everything is written in one transaction. A refused archive leaves the account exactly
/// as it was. Records get new change tags and stamps, as on any server they move to. What `stadiumcloud accounts
/// import` runs.
public func importAccount(
    _ name: String, from archive: URL, trustUnsigned: Bool = false, records: RecordStore, assets: any AssetStore, logger: Logger
) async throws -> AccountImportSummary {
    let (manifest, contents) = try checkedArchive(archive, trustUnsigned: trustUnsigned, signer: records.signer)
    guard let (account, _) = try await records.exportPlan(accountName: name, logger: logger) else {
        throw CloudError.notFound("no account is named \(name); create it first (stadiumcloud accounts create)")
    }
    // Before staging any bytes; checked again inside the transaction.
    try await records.checkHoldsNothing(account, logger: logger)
    let privateDatabases = manifest.databases.filter { $0.scope == DatabaseScope.private.rawValue }
    let checksums = Dictionary(manifest.files.map { ($0.path, $0.sha256) }, uniquingKeysWith: { first, _ in first })
    let staged = try await stageAssets(of: contents, from: archive, into: assets)
    var published: [(databaseID: Int64, checksum: String)] = []
    do {
        let stamp = ChangeStamp(timestamp: records.clock.now, userRecordName: account.userRecordName, deviceID: "import")
        let summary = try await records.importAccount(into: account, logger: logger) { write in
            var summary = AccountImportSummary(publicRecordsSkipped: contents.publicRecords)
            var targets: [String: DatabaseRef] = [:]
            for database in privateDatabases {
                let ref = try await write.privateDatabase(container: database.container, environment: database.environment)
                targets[database.folder] = ref
                let zones = database.zones.filter { $0 != defaultZoneName }
                try await write.createZones(zones, in: ref)
                summary.zones += zones.count
                for (asset, upload) in staged[database.folder] ?? [] {
                    let owner = assetOwner(databaseID: ref.id)
                    try await write.placeAsset(checksum: asset.checksum, size: asset.size, in: ref) {
                        published.append((ref.id, asset.checksum))
                        try await assets.publish(upload: upload, owner: owner, asset: asset)
                    }
                    summary.assets += 1
                }
            }
            let reader = try Tar.Reader(url: archive)
            while let entry = try reader.next() {
                guard case .page(let folder) = AccountArchive.Entry(path: entry.path), let database = targets[folder] else { continue }
                var bytes = Data()
                while let piece = try reader.read(max: 1 << 20) { bytes += piece }
                // The file is read again: it must still be what was checked.
                guard SHA256.hash(data: bytes).hexString == checksums[entry.path] else {
                    throw CloudError.badRequest("\(entry.path) changed while it was being imported; nothing was imported")
                }
                let page = try AccountArchive.Page(bytes, path: entry.path)
                summary.records += try await write.write(page.drafts, zone: page.zoneName, in: database, stamp: stamp)
            }
            return summary
        }
        logger.notice(
            "account imported",
            metadata: ["account": "\(name)", "records": "\(summary.records)", "assets": "\(summary.assets)", "zones": "\(summary.zones)"])
        return summary
    } catch {
        // What the refused import left is cleaned up; what cannot be now, the asset collector removes later (staged
        // uploads abandoned for a day, bytes no record references), so a failure here is logged and the refusal stands.
        func cleanUp(_ what: String, _ work: () async throws -> Void) async {
            do { try await work() } catch let cleanup {
                logger.error(
                    "a refused account import's \(what) could not be removed now; the asset collector will",
                    metadata: ["account": "\(name)", "error": "\(cleanup)"])
                Counter(label: "stadiumcloud_job_failures_total", dimensions: [("job", "account-import-cleanup")]).increment()
            }
        }
        for (_, upload) in staged.values.joined() { await cleanUp("staged upload") { try await assets.discard(upload: upload) } }
        // Bytes placed before the transaction rolled back have no row; removed under the collector's lock, so an
        // upload of the same bytes to the same database meanwhile keeps them.
        await cleanUp("asset bytes") {
            _ = try await records.collectOrphanBlobs(published, logger: logger) { databaseID, checksum in
                try await assets.remove(owner: assetOwner(databaseID: databaseID), checksum: checksum)
            }
        }
        throw error
    }
}

/// What an import refuses an archive with when its manifest's MAC is not this server's.
public let unauthenticatedArchive =
    "the archive was not made by this server or was changed after export (its manifest's MAC does not match this server's key); nothing was imported. An archive from another server is imported only when the operator trusts the file: stadiumcloud accounts import --trust-unsigned"

/// The archive's manifest and contents once it is whole, authentic (unless `trustUnsigned`) and every page and asset
/// reference is sound; BAD_REQUEST naming the first fault otherwise. Writes nothing.
func checkedArchive(_ archive: URL, trustUnsigned: Bool, signer: TokenSigner) throws -> (AccountArchive.Manifest, AccountArchive.Contents) {
    do {
        let manifest = try AccountArchive.verify(at: archive)
        guard trustUnsigned || AccountArchive.Authenticator(signer: signer).isAuthentic(manifest) else {
            throw CloudError.badRequest(unauthenticatedArchive)
        }
        return (manifest, try AccountArchive.Contents(of: archive, manifest: manifest))
    } catch let error as ArchiveError {
        throw CloudError.badRequest("\(error); nothing was imported")
    }
}

/// Copies every asset of the archive's private databases into the store as an upload and checks its SHA-256 there:
/// by folder, each asset with its upload's id. Nothing of any account yet; on failure the uploads are dropped.
private func stageAssets(
    of contents: AccountArchive.Contents, from archive: URL, into assets: any AssetStore
) async throws -> [String: [(asset: StoredAsset, upload: String)]] {
    var staged: [String: [(asset: StoredAsset, upload: String)]] = [:]
    do {
        let reader = try Tar.Reader(url: archive)
        while let entry = try reader.next() {
            guard case .asset(let folder, let checksum) = AccountArchive.Entry(path: entry.path), contents.assets[folder] != nil else { continue }
            // Not yet named after a database (`db42-…`): it has none until the transaction; the partial-upload sweep
            // removes one a crash leaves.
            let upload = "import-\(UUID().uuidString)"
            staged[folder, default: []].append((StoredAsset(checksum: checksum, size: entry.size), upload))
            var offset: Int64 = 0
            // Pieces above S3's smallest part, so each append sends whole parts.
            while let piece = try reader.read(max: 8 << 20) {
                offset = try await assets.append(OnePiece(buffer: ByteBuffer(bytes: piece)), to: upload, at: offset, maxSize: entry.size)
            }
            let stored = try await assets.verify(upload: upload, expectedChecksum: checksum)
            staged[folder]![staged[folder]!.count - 1].asset = stored
        }
        return staged
    } catch {
        for (_, upload) in staged.values.joined() { try? await assets.discard(upload: upload) }
        if let error = error as? ArchiveError { throw CloudError.badRequest("\(error); nothing was imported") }
        throw error
    }
}

/// One buffer as the `AsyncSequence` an asset store appends.
private struct OnePiece: AsyncSequence, Sendable {
    let buffer: ByteBuffer

    struct AsyncIterator: AsyncIteratorProtocol {
        var buffer: ByteBuffer?
        mutating func next() async -> ByteBuffer? {
            defer { self.buffer = nil }
            return self.buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: self.buffer) }
}
