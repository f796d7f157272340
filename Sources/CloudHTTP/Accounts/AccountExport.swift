import CloudAssets
import CloudCore
import CloudPostgres
import CloudRuntime
import Crypto
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// An account as one archive (`AccountArchive`, docs/PRIVACY.md "Export"), written as a stream: a page of records
/// or a megabyte of an asset at a time, so memory stays flat whatever the account holds. What `users/export`, the
/// console and `stadiumcloud accounts export` send.
public struct AccountExport: Sendable {
    public let account: Account
    let databases: [ExportedDatabase]

    /// The export of the account named `name`, or nil when there is none.
    public static func of(_ name: String, records: RecordStore, logger: Logger) async throws -> AccountExport? {
        guard let (account, databases) = try await records.exportPlan(accountName: name, logger: logger) else { return nil }
        return AccountExport(account: account, databases: databases)
    }

    /// The archive as an HTTP answer, streamed as it is read (`users/export`, the console's Export). One at a time per
    /// account in this process: each reads everything the account holds, so a second one while the first streams is
    /// THROTTLED.
    func response(records: RecordStore, assets: any AssetStore, logger: Logger) throws -> Response {
        guard let slot = StreamingExport(self.account.id) else {
            throw CloudError(.throttled, "an export of this account is being downloaded already; try again once it is done", retryAfter: 60)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/x-tar", .cacheControl: "no-store",
                .contentDisposition: "attachment; filename=\"\(AccountArchive.fileName(for: self.account.name))\"",
            ],
            body: ResponseBody { writer in
                try await self.write(records: records, assets: assets, logger: logger) { try await writer.write($0) }
                try await writer.finish(nil)
                _ = slot  // held until the answer is gone, written or not
            })
    }

    /// Writes the archive to `write` and returns its manifest (also written, last). Each page of records is read in
    /// its own snapshot; an asset whose stored bytes no longer match their checksum stops the export (the archive
    /// then has no manifest, and every reader refuses it).
    @discardableResult
    public func write(
        records: RecordStore, assets: any AssetStore, logger: Logger, to write: (ByteBuffer) async throws -> Void
    ) async throws -> AccountArchive.Manifest {
        try await withoutActuallyEscaping(write) { write in
            try await self.write(
                records: records, assets: assets, logger: logger, to: TarStream(write: write, modifiedSeconds: records.clock.now / 1000))
        }
    }

    private func write(records: RecordStore, assets: any AssetStore, logger: Logger, to archive: TarStream) async throws -> AccountArchive.Manifest {
        var listed: [AccountArchive.Database] = []
        for (index, database) in self.databases.enumerated() {
            let folder = "d\(index + 1)"
            listed.append(
                AccountArchive.Database(
                    folder: folder, container: database.container, environment: database.environment, scope: database.scope.rawValue,
                    zones: database.zones))
            let owner = database.scope == .private ? self.account.userRecordName : "_defaultOwner"
            for (zoneIndex, zone) in database.zones.enumerated() {
                var after: String?
                var pageNumber = 0
                while true {
                    let page = try await records.exportPage(
                        of: database, zone: zone, createdBy: self.account.userRecordName, after: after, limit: AccountArchive.recordsPerPage,
                        logger: logger)
                    // An empty zone still gets its (empty) first page, so it is seen and imported.
                    guard !page.isEmpty || pageNumber == 0 else { break }
                    pageNumber += 1
                    let number = String(pageNumber)
                    try await archive.file(
                        "records/\(folder)/z\(zoneIndex + 1)/\(String(repeating: "0", count: max(0, 6 - number.count)) + number).json",
                        bytes: Self.page(page, of: database, zone: zone, owner: owner))
                    guard page.count == AccountArchive.recordsPerPage, let last = page.last else { break }
                    after = last.recordName
                }
            }
            guard database.scope == .private else { continue }
            for asset in try await records.exportedAssets(of: database, logger: logger) {
                try await archive.file("assets/\(folder)/\(asset.checksum)", size: asset.size, sha256: asset.checksum) { sink in
                    try await assets.read(owner: assetOwner(databaseID: database.id), checksum: asset.checksum, range: nil, to: sink)
                }
            }
        }
        // Signed, so that an import into this server refuses an archive changed since (docs/PRIVACY.md, "Export").
        let manifest = AccountArchive.Authenticator(signer: records.signer).signed(
            AccountArchive.Manifest(
                accountName: self.account.name, userRecordName: self.account.userRecordName, exportedAtMs: records.clock.now,
                databases: listed, files: archive.files))
        var json = JSONWriter(capacity: 256 + 128 * archive.files.count)
        json.value(manifest.json)
        try await archive.file(AccountArchive.manifestPath, bytes: json.bytes)
        try await archive.finish()
        logger.notice("account exported", metadata: ["files": "\(archive.files.count)", "bytes": "\(archive.written)"])
        return manifest
    }

    /// `{"database", "zoneID", "records": [CloudKit record dictionaries]}`.
    static func page(_ records: [RecordSnapshot], of database: ExportedDatabase, zone: String, owner: String) -> [UInt8] {
        var writer = WireWriter()
        writer.object { writer in
            writer.json.key("database")
            writer.json.value([
                "container": .string(database.container), "environment": .string(database.environment), "scope": .string(database.scope.rawValue),
            ])
            writer.json.key("zoneID"); writer.zoneID(zone, owner: owner)
            writer.list("records") { writer in
                for record in records { writer.record(record, zoneName: zone, owner: owner) }
            }
        }
        return writer.json.bytes
    }
}

/// Writes tar entries to a byte sink, hashing each file on its way out.
private final class TarStream {
    let write: (ByteBuffer) async throws -> Void
    let modifiedSeconds: Int64
    private(set) var files: [AccountArchive.File] = []
    private(set) var written: Int64 = 0

    init(write: @escaping (ByteBuffer) async throws -> Void, modifiedSeconds: Int64) {
        self.write = write
        self.modifiedSeconds = modifiedSeconds
    }

    func file(_ path: String, bytes: [UInt8]) async throws {
        var buffer = ByteBuffer(bytes: try Tar.header(path: path, size: Int64(bytes.count), modifiedSeconds: self.modifiedSeconds))
        buffer.writeBytes(bytes)
        buffer.writeBytes(Tar.padding(after: Int64(bytes.count)))
        try await self.emit(buffer)
        if path != AccountArchive.manifestPath {
            self.files.append(AccountArchive.File(path: path, size: Int64(bytes.count), sha256: SHA256.hash(data: bytes).hexString))
        }
    }

    /// A file of `size` bytes that `produce` hands to its sink piece by piece; they must hash to `sha256`.
    func file(_ path: String, size: Int64, sha256: String, produce: (@escaping (ByteBuffer) async throws -> Void) async throws -> Void) async throws {
        try await self.emit(ByteBuffer(bytes: try Tar.header(path: path, size: size, modifiedSeconds: self.modifiedSeconds)))
        var hash = SHA256()
        var count: Int64 = 0
        try await produce { piece in
            piece.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
            count += Int64(piece.readableBytes)
            guard count <= size else { throw ArchiveError("\(path) has more bytes than its stored size") }
            try await self.emit(piece)
        }
        let digest = hash.finalize().hexString
        guard count == size, digest == sha256 else {
            throw ArchiveError("the stored bytes of \(path) no longer match their size and SHA-256; the export stops here")
        }
        try await self.emit(ByteBuffer(bytes: Tar.padding(after: size)))
        self.files.append(AccountArchive.File(path: path, size: size, sha256: digest))
    }

    func finish() async throws { try await self.emit(ByteBuffer(bytes: Tar.end)) }

    private func emit(_ buffer: ByteBuffer) async throws {
        self.written += Int64(buffer.readableBytes)
        try await self.write(buffer)
    }
}

/// An account's export being streamed by this process; the account is free again once the answer holding it is gone.
private final class StreamingExport: Sendable {
    private static let accounts = Mutex<Set<Int64>>([])
    let accountID: Int64

    init?(_ accountID: Int64) {
        guard Self.accounts.withLock({ $0.insert(accountID).inserted }) else { return nil }
        self.accountID = accountID
    }

    deinit { _ = Self.accounts.withLock { $0.remove(self.accountID) } }
}
