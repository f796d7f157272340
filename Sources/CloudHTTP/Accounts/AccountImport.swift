import CloudAssets
import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Logging
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
/// its records with the same names, types and fields, and its assets' bytes (docs/PRIVACY.md, "Export"). The whole
/// archive is checked against its manifest first, so a damaged or altered one writes nothing. Records get new change
/// tags and stamps, as on any server they move to. What `stadiumcloud accounts import` runs.
public func importAccount(
    _ name: String, from archive: URL, records: RecordStore, assets: any AssetStore, logger: Logger
) async throws -> AccountImportSummary {
    let manifest: AccountArchive.Manifest
    do { manifest = try AccountArchive.verify(at: archive) } catch let error as ArchiveError {
        throw CloudError.badRequest("\(error); nothing was imported")
    }
    guard let (account, existing) = try await records.exportPlan(accountName: name, logger: logger) else {
        throw CloudError.notFound("no account is named \(name); create it first (stadiumcloud accounts create)")
    }
    for database in existing where database.scope == .private {
        let empty = try await records.exportPage(of: database, zone: defaultZoneName, createdBy: "", after: nil, limit: 1, logger: logger).isEmpty
        guard empty, database.zones == [defaultZoneName] else {
            throw CloudError(.conflict, "account \(name) already holds data; an export is imported into a fresh account only")
        }
    }
    var summary = AccountImportSummary()
    var targets: [String: DatabaseRef] = [:]
    for database in manifest.databases where database.scope == DatabaseScope.private.rawValue {
        let ref = try await records.database(
            container: database.container, environment: database.environment, scope: .private, owner: account, logger: logger)
        targets[database.folder] = ref
        let zones = database.zones.filter { $0 != defaultZoneName }
        if !zones.isEmpty {
            for outcome in try await records.modifyZones(zones.map { .create($0) }, in: ref, logger: logger) {
                if case .failed(_, let error) = outcome { throw error }
            }
            summary.zones += zones.count
        }
    }
    let stamp = ChangeStamp(timestamp: records.clock.now, userRecordName: account.userRecordName, deviceID: "import")
    let reader = try Tar.Reader(url: archive)
    while let entry = try reader.next() {
        let parts = entry.path.split(separator: "/").map(String.init)
        if parts.count == 3, parts[0] == "assets" {
            guard let database = targets[parts[1]] else { continue }
            try await placeAsset(checksum: parts[2], size: entry.size, from: reader, in: database, records: records, assets: assets, logger: logger)
            summary.assets += 1
        } else if parts.count == 4, parts[0] == "records" {
            var bytes = Data()
            while let piece = try reader.read(max: 1 << 20) { bytes += piece }
            let page = try JSONValue.parse(bytes)
            guard let zone = page["zoneID"]?["zoneName"]?.stringValue, let list = page["records"]?.arrayValue else {
                throw CloudError.badRequest("\(entry.path) lacks its zoneID or records; nothing more was imported")
            }
            guard let database = targets[parts[1]] else {
                summary.publicRecordsSkipped += list.count
                continue
            }
            let drafts = try list.map { record -> RecordDraft in
                guard let recordName = record["recordName"]?.stringValue, let recordType = record["recordType"]?.stringValue,
                    let fields = record["fields"]?.objectValue
                else { throw CloudError.badRequest("a record of \(entry.path) lacks its recordName, recordType or fields") }
                return RecordDraft(
                    recordName: recordName, recordType: recordType,
                    fields: try fields.mapValues { value in
                        guard let field = FieldValue(stored: value) else {
                            throw CloudError.badRequest("a field of \(recordName) in \(entry.path) is not a CloudKit field value")
                        }
                        return field
                    })
            }
            guard !drafts.isEmpty else { continue }
            summary.records += try await records.rewriteZones([zone], in: database, stamp: stamp, logger: logger) { _ in [zone: drafts] }
        }
    }
    logger.notice(
        "account imported",
        metadata: ["account": "\(name)", "records": "\(summary.records)", "assets": "\(summary.assets)", "zones": "\(summary.zones)"])
    return summary
}

/// Streams one asset's bytes into the store as an upload, checks their SHA-256 and places them as the database's.
private func placeAsset(
    checksum: String, size: Int64, from reader: Tar.Reader, in database: DatabaseRef, records: RecordStore, assets: any AssetStore,
    logger: Logger
) async throws {
    let owner = assetOwner(databaseID: database.id)
    let upload = "\(owner)-import-\(UUID().uuidString)"
    var offset: Int64 = 0
    do {
        // Pieces above S3's smallest part, so each append sends whole parts.
        while let piece = try reader.read(max: 8 << 20) {
            offset = try await assets.append(OnePiece(buffer: ByteBuffer(bytes: piece)), to: upload, at: offset, maxSize: size)
        }
        let stored = try await assets.verify(upload: upload, expectedChecksum: checksum)
        try await records.publishAsset(checksum: stored.checksum, size: stored.size, in: database.id, logger: logger) {
            try await assets.publish(upload: upload, owner: owner, asset: stored)
        }
    } catch {
        try? await assets.discard(upload: upload)
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
