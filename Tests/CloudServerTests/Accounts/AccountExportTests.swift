import CloudAssets
import CloudCore
import Crypto
@testable import CloudHTTP
@testable import CloudPostgres
import Foundation
import Hummingbird
import NIOCore
import PostgresNIO
import SportsDomain
import StadiumCloudClient
@testable import CloudSync
import Testing

/// The account export (docs/PRIVACY.md, "Export"): one archive any `tar` reads, every file checked against its
/// manifest, and an import into a fresh account that reproduces the records and the assets' bytes exactly.
@Suite(.bounded) struct AccountExportTests {
    @Test func aPersonsExportImportsIntoAFreshAccountExactly() async throws {
        try await ClientSyncTests.run { server, folder in
            let records = server.dependencies.records
            let assets = server.dependencies.assets
            let logger = TestDatabase.logger
            let phone = try await ClientSyncTests.device(server, folder, "phone")
            let visit = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_743_800_000_000, notes: "bobbleheads").recordName
            try await phone.sync()
            let photo = URL(fileURLWithPath: folder + "/photo.jpg")
            let thumbnail = URL(fileURLWithPath: folder + "/thumb.jpg")
            try Data(TestData.bytes(700_000)).write(to: photo)
            try Data(TestData.bytes(4_000)).write(to: thumbnail)
            try await phone.addPhoto(photo, toVisit: visit, caption: "from the upper deck", thumbnail: thumbnail)
            try await phone.sync()
            // More than a page of records in a zone of its own, and a trip poll in the public database.
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
            for start in stride(from: 0, to: 250, by: 125) {
                let batch = (start..<start + 125).map { Op.create("trip-\($0)", ["note": .string("leg \($0)"), "day": .int(Int64($0))]) }
                #expect(try await server.modify(batch, zone: "Trips", as: server.alice).anyError == nil)
            }
            let poll = UnlistedZone.prefix + "QWxpY2VzRXhwb3J0UG9sbA"
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(poll)]]]]], database: "public",
                as: server.alice)
            let pollRecord = Op.typed(
                "create", TripPolls.pollRecordName, type: TripPolls.pollType,
                fields: ["title": ["value": "Where next"], "options": ["value": ["East", "West"]], "closesAt": ["value": 1_900_000_000_000]])
            #expect(try await server.modify([pollRecord], zone: poll, database: "public", as: server.alice).anyError == nil)

            let archive = URL(fileURLWithPath: folder + "/alice.tar")
            let manifest = try await phone.exportAccount(to: archive)
            #expect(manifest.accountName == "alice" && manifest.databases.map(\.scope) == ["private", "public"])
            #expect(manifest.files.filter { $0.path.hasPrefix("assets/") }.count == 2)
            #expect(manifest.files.filter { $0.path.hasPrefix("records/d1/") }.count == 3, "the default zone's page, two of Trips")
            // Any tar reads it.
            let listing = try Self.tar(["-tf", archive.path])
            #expect(listing.contains("manifest.json") && listing.contains("records/d1/z1/000001.json"), "\(listing)")

            let carol = try await server.dependencies.credentials.createAccount(name: "carol", idleMs: 3_600_000, logger: logger)
            let summary = try await importAccount(
                "carol", from: archive, records: records, assets: assets, logger: logger)
            let original = try await Self.contents(of: server.alice.account, records, assets)
            let imported = try await Self.contents(of: carol.account, records, assets)
            #expect(original.count >= 252 + 2 && imported == original)
            #expect(summary == AccountImportSummary(zones: 1, records: original.count - 2, assets: 2, publicRecordsSkipped: 1))

            // Once is all: the account now holds data.
            await #expect { try await importAccount("carol", from: archive, records: records, assets: assets, logger: logger) } throws: {
                ($0 as? CloudError)?.code == .conflict
            }
        }
    }

    /// A cut, altered or foreign archive writes nothing, on the server and on the device.
    @Test func aDamagedArchiveIsRefusedAndWritesNothing() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let assets = server.dependencies.assets
            let logger = TestDatabase.logger
            try await server.modify([Op.create("visit-1", ["notes": "Opening Day"])], as: server.alice)
            let photo = try await server.upload(TestData.bytes(50_000), as: server.alice)
            #expect(try await server.savePhoto("photo-1", photo, as: server.alice).anyError == nil)
            let export = try #require(try await AccountExport.of("alice", records: records, logger: logger))
            var bytes = Data()
            try await export.write(records: records, assets: assets, logger: logger) { bytes += Data($0.readableBytesView) }
            let folder = NSTemporaryDirectory() + "stadiumcloud-export-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let good = URL(fileURLWithPath: folder + "/good.tar")
            try bytes.write(to: good)
            #expect(
                try AccountArchive.verify(at: good).files.map(\.path).sorted() == [
                    "assets/d1/\(try #require(photo["fileChecksum"]?.stringValue))", "records/d1/z1/000001.json",
                ])

            let dave = try await server.dependencies.credentials.createAccount(name: "dave", idleMs: 3_600_000, logger: logger)
            // One byte of the photo changed; the archive cut before its manifest; a file that is no export.
            var altered = bytes
            let photoAt = try #require(bytes.range(of: Data(TestData.bytes(64))))
            altered[photoAt.lowerBound + 10] ^= 0xFF
            let cut = bytes.prefix(bytes.count - 3 * 512)
            for (name, content, reason) in [
                ("altered", altered, "altered"), ("cut", Data(cut), "cut short"), ("foreign", Data(repeating: 7, count: 2048), "checksum"),
            ] {
                let file = URL(fileURLWithPath: "\(folder)/\(name).tar")
                try content.write(to: file)
                await #expect { try await importAccount("dave", from: file, records: records, assets: assets, logger: logger) } throws: { error in
                    guard let error = error as? CloudError else { return false }
                    return error.code == .badRequest && error.reason.contains(reason)
                }
            }
            #expect(try await Self.contents(of: dave.account, records, assets).isEmpty)
            #expect(try await AccountExport.of("nobody", records: records, logger: logger) == nil)
        }
    }

    /// All or nothing: an archive whose last page holds a field no write accepts is refused before anything is
    /// written, so the account stays fresh and the corrected archive then imports.
    @Test func anArchiveWithAnInvalidLastPageLeavesTheAccountExactlyAsItWas() async throws {
        try await TestServer.run { server in
            let (records, assets, logger) = (server.dependencies.records, server.dependencies.assets, TestDatabase.logger)
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Empty"]]]]], as: server.alice)
            for start in stride(from: 0, to: 500, by: 125) {
                let batch = (start..<start + 125).map { Op.create(String(format: "trip-%03d", $0), ["note": .string("leg \($0)")]) }
                #expect(try await server.modify(batch, zone: "Trips", as: server.alice).anyError == nil)
            }
            let original = try await EditableArchive.export("alice", server)
            // 500 records of Trips make three pages; the third is the archive's last page of records.
            let lastPage = try #require(original.entries.map(\.path).last { $0.hasPrefix("records/d1/") && $0.hasSuffix("/000003.json") })
            var invalid = original
            try invalid.setField("note", ofLastRecordIn: lastPage, to: ["type": "NOT_A_TYPE", "value": "leg 499"])
            let dave = try await server.dependencies.credentials.createAccount(name: "dave", idleMs: 3_600_000, logger: logger)
            let before = try await Self.rows(of: dave.account, records)
            // Signed by this server, so only the page itself is at fault.
            let file = try invalid.write(mac: .signed(by: records.signer))
            await #expect { try await importAccount("dave", from: file, records: records, assets: assets, logger: logger) } throws: { error in
                guard let error = error as? CloudError else { return false }
                return error.code == .badRequest && error.reason.contains(lastPage) && error.reason.contains("nothing was imported")
            }
            #expect(try await Self.rows(of: dave.account, records) == before)
            #expect(before.isEmpty, "no database, no zone, no record")

            let summary = try await importAccount("dave", from: try original.write(), records: records, assets: assets, logger: logger)
            #expect(summary.records == 500 && summary.zones == 2)
            #expect(try await Self.contents(of: dave.account, records, assets) == Self.contents(of: server.alice.account, records, assets))
        }
    }

    /// A record whose asset's bytes are missing from the archive, or are not the bytes its checksum names, is refused
    /// with nothing written: no record would point at bytes that do not exist.
    @Test func anArchiveMissingAnAssetOrWithOtherBytesIsRefusedWithNothingWritten() async throws {
        try await TestServer.run { server in
            let (records, assets, logger) = (server.dependencies.records, server.dependencies.assets, TestDatabase.logger)
            try await server.modify([Op.create("visit-1", ["notes": "Opening Day"])], as: server.alice)
            let photo = try await server.upload(TestData.bytes(50_000), as: server.alice)
            #expect(try await server.savePhoto("photo-1", photo, as: server.alice).anyError == nil)
            let checksum = try #require(photo["fileChecksum"]?.stringValue)
            let original = try await EditableArchive.export("alice", server)
            var missing = original
            missing.entries.removeAll { $0.path == "assets/d1/\(checksum)" }
            var otherBytes = original
            otherBytes.entries[try #require(otherBytes.entries.firstIndex { $0.path == "assets/d1/\(checksum)" })].bytes = Data(
                TestData.bytes(49_999))
            let dave = try await server.dependencies.credentials.createAccount(name: "dave", idleMs: 3_600_000, logger: logger)
            for (archive, reason) in [(missing, "whose bytes are not in the archive"), (otherBytes, "do not have the SHA-256 its name says")] {
                let file = try archive.write(mac: .signed(by: records.signer))
                await #expect { try await importAccount("dave", from: file, records: records, assets: assets, logger: logger) } throws: { error in
                    guard let error = error as? CloudError else { return false }
                    return error.code == .badRequest && error.reason.contains(reason)
                }
                #expect(try await Self.rows(of: dave.account, records).isEmpty)
            }
            _ = try await importAccount("dave", from: try original.write(), records: records, assets: assets, logger: logger)
            #expect(try await Self.contents(of: dave.account, records, assets) == Self.contents(of: server.alice.account, records, assets))
        }
    }

    /// A write the transaction itself refuses (here the production schema, which has no such record type) rolls back
    /// the databases, zones and assets written before it, and the asset's bytes moved into place go too.
    @Test func aWriteRefusedInsideTheTransactionRollsAllOfItBack() async throws {
        try await TestServer.run { server in
            let (records, assets, logger) = (server.dependencies.records, server.dependencies.assets, TestDatabase.logger)
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
            let photo = try await server.upload(TestData.bytes(50_000), as: server.alice)
            #expect(try await server.savePhoto("photo-1", photo, as: server.alice).anyError == nil)
            var toProduction = try await EditableArchive.export("alice", server)
            toProduction.manifest.databases[0].environment = "production"
            let dave = try await server.dependencies.credentials.createAccount(name: "dave", idleMs: 3_600_000, logger: logger)
            let blobsBefore = try await assets.blobs(olderThan: -1).map { "\($0.owner) \($0.checksum)" }.sorted()
            let file = try toProduction.write(mac: .signed(by: records.signer))
            // Refused at the records, written after the database, its zones and the photo's bytes.
            await #expect { try await importAccount("dave", from: file, records: records, assets: assets, logger: logger) } throws: { error in
                (error as? CloudError)?.reason.contains("is not declared for the private database") == true
            }
            #expect(try await Self.rows(of: dave.account, records).isEmpty)
            #expect(try await assets.blobs(olderThan: -1).map { "\($0.owner) \($0.checksum)" }.sorted() == blobsBefore)
        }
    }

    /// An export carries this server's MAC over its manifest: an archive changed afterwards, even with every checksum
    /// of its manifest made again, or one signed by another server, is refused unless the operator trusts it.
    @Test func anArchiveEditedAfterExportIsRefused() async throws {
        try await TestServer.run { server in
            let (records, assets, logger) = (server.dependencies.records, server.dependencies.assets, TestDatabase.logger)
            try await server.modify([Op.create("visit-1", ["notes": "Opening Day"])], as: server.alice)
            let original = try await EditableArchive.export("alice", server)
            #expect(original.manifest.mac?.count == 64)
            var edited = original
            try edited.setField("notes", ofLastRecordIn: "records/d1/z1/000001.json", to: ["type": "STRING", "value": "Closing Day"])
            let otherServer = TokenSigner(key: Array(repeating: UInt8(7), count: 32))
            let dave = try await server.dependencies.credentials.createAccount(name: "dave", idleMs: 3_600_000, logger: logger)
            for file in [
                try edited.write(mac: .none), try edited.write(), try edited.write(mac: .signed(by: otherServer)),
                try original.write(mac: .signed(by: otherServer)),
            ] {
                await #expect { try await importAccount("dave", from: file, records: records, assets: assets, logger: logger) } throws: { error in
                    guard let error = error as? CloudError else { return false }
                    return error.code == .badRequest && error.reason == unauthenticatedArchive
                }
            }
            #expect(try await Self.rows(of: dave.account, records).isEmpty)

            _ = try await importAccount("dave", from: try original.write(), records: records, assets: assets, logger: logger)
            #expect(try await Self.contents(of: dave.account, records, assets) == Self.contents(of: server.alice.account, records, assets))
            // Another server's archive, when the operator trusts the file.
            let erin = try await server.dependencies.credentials.createAccount(name: "erin", idleMs: 3_600_000, logger: logger)
            _ = try await importAccount(
                "erin", from: try edited.write(mac: .signed(by: otherServer)), trustUnsigned: true, records: records, assets: assets, logger: logger)
            #expect(try await Self.contents(of: erin.account, records, assets).first?.contains("Closing Day") == true)
        }
    }

    /// One export at a time per account: a second one while the first is being answered is THROTTLED; the account is
    /// free again once the first answer is gone.
    @Test func oneExportAtATimePerAccount() async throws {
        try await TestServer.run { server in
            let (records, assets, logger) = (server.dependencies.records, server.dependencies.assets, TestDatabase.logger)
            let export = try #require(try await AccountExport.of("alice", records: records, logger: logger))
            var first: Response? = try export.response(records: records, assets: assets, logger: logger)
            #expect { try export.response(records: records, assets: assets, logger: logger) } throws: { ($0 as? CloudError)?.code == .throttled }
            let other = try #require(try await AccountExport.of("bob", records: records, logger: logger))
            _ = try other.response(records: records, assets: assets, logger: logger)
            #expect(first != nil)
            first = nil
            _ = try export.response(records: records, assets: assets, logger: logger)
        }
    }

    /// Each live private record as `zone/name type fields`, and each asset as `checksum size sha256-of-the-bytes-read`.
    static func contents(of account: Account, _ records: RecordStore, _ assets: any AssetStore) async throws -> [String] {
        let rows = try await records.client.reading { connection in
            try await connection.query(
                """
                SELECT z.zone_name || '/' || r.record_name || ' ' || r.record_type || ' ' || r.fields::text FROM records r
                JOIN zones z ON z.id = r.zone_id JOIN databases d ON d.id = z.database_id
                WHERE d.owner_account_id = \(account.id) AND NOT r.deleted ORDER BY 1
                """, logger: TestDatabase.logger
            ).decode(String.self).all()
        }
        let blobs = try await records.client.reading { connection in
            try await connection.query(
                """
                SELECT a.database_id, a.checksum, a.size FROM assets a JOIN databases d ON d.id = a.database_id
                WHERE d.owner_account_id = \(account.id) ORDER BY a.checksum
                """, logger: TestDatabase.logger
            ).decode((Int64, String, Int64).self).all()
        }
        var described = rows
        for (databaseID, checksum, size) in blobs {
            var hash = SHA256()
            try await assets.read(owner: "db\(databaseID)", checksum: checksum, range: nil) { piece in
                piece.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
            }
            described.append("\(checksum) \(size) \(hash.finalize().hexString)")
        }
        return described
    }

    /// Every row of the account's databases, zones, records and assets, as text: what "exactly as it was" compares.
    static func rows(of account: Account, _ records: RecordStore) async throws -> [String] {
        try await records.client.reading { connection in
            try await connection.query(
                """
                SELECT 'database ' || row_to_json(d)::text FROM databases d WHERE d.owner_account_id = \(account.id)
                UNION ALL SELECT 'zone ' || row_to_json(z)::text FROM zones z JOIN databases d ON d.id = z.database_id
                    WHERE d.owner_account_id = \(account.id)
                UNION ALL SELECT 'record ' || row_to_json(r)::text FROM records r JOIN zones z ON z.id = r.zone_id
                    JOIN databases d ON d.id = z.database_id WHERE d.owner_account_id = \(account.id)
                UNION ALL SELECT 'asset ' || row_to_json(a)::text FROM assets a JOIN databases d ON d.id = a.database_id
                    WHERE d.owner_account_id = \(account.id)
                ORDER BY 1
                """, logger: TestDatabase.logger
            ).decode(String.self).all()
        }
    }

    static func tar(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["tar"] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

/// An export taken apart to be changed as someone holding the file could: files replaced or removed, the manifest's
/// list of sizes and SHA-256s made again, signed with a key of the test's choosing or not at all.
struct EditableArchive {
    var entries: [(path: String, bytes: Data)]
    var manifest: AccountArchive.Manifest

    static func export(_ name: String, _ server: TestServer) async throws -> EditableArchive {
        let (records, assets, logger) = (server.dependencies.records, server.dependencies.assets, TestDatabase.logger)
        let export = try #require(try await AccountExport.of(name, records: records, logger: logger))
        var bytes = Data()
        try await export.write(records: records, assets: assets, logger: logger) { bytes += Data($0.readableBytesView) }
        let file = Self.temporaryFile()
        try bytes.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let reader = try Tar.Reader(url: file)
        var entries: [(path: String, bytes: Data)] = []
        while let entry = try reader.next() {
            guard entry.path != AccountArchive.manifestPath else { continue }
            var content = Data()
            while let piece = try reader.read(max: 1 << 20) { content += piece }
            entries.append((entry.path, content))
        }
        return EditableArchive(entries: entries, manifest: try AccountArchive.verify(at: file))
    }

    /// Sets a field of the last record of a page.
    mutating func setField(_ name: String, ofLastRecordIn path: String, to value: JSONValue) throws {
        let index = try #require(self.entries.firstIndex { $0.path == path })
        guard case .object(var page) = try JSONValue.parse(self.entries[index].bytes), var list = page["records"]?.arrayValue,
            case .object(var record) = list.last, var fields = record["fields"]?.objectValue
        else { throw ArchiveError("\(path) is not a page with records") }
        fields[name] = value
        record["fields"] = .object(fields)
        list[list.count - 1] = .object(record)
        page["records"] = .array(list)
        self.entries[index].bytes = Data(JSONWriter.encode(.object(page)).utf8)
    }

    enum MAC {
        /// The exporter's, as it was.
        case kept
        case none
        /// One made with this signer's key.
        case signed(by: TokenSigner)
    }

    /// The archive as a file, its manifest listing the files as they are now.
    func write(mac: MAC = .kept) throws -> URL {
        var manifest = self.manifest
        manifest.files = self.entries.map {
            AccountArchive.File(path: $0.path, size: Int64($0.bytes.count), sha256: SHA256.hash(data: $0.bytes).hexString)
        }
        switch mac {
        case .kept: break
        case .none: manifest.mac = nil
        case .signed(let signer): manifest = AccountArchive.Authenticator(signer: signer).signed(manifest)
        }
        var tar = Data()
        for (path, bytes) in self.entries + [(AccountArchive.manifestPath, Data(JSONWriter.encode(manifest.json).utf8))] {
            tar.append(contentsOf: try Tar.header(path: path, size: Int64(bytes.count), modifiedSeconds: 0))
            tar.append(bytes)
            tar.append(contentsOf: Tar.padding(after: Int64(bytes.count)))
        }
        tar.append(contentsOf: Tar.end)
        let file = Self.temporaryFile()
        try tar.write(to: file)
        return file
    }

    static func temporaryFile() -> URL {
        URL(fileURLWithPath: NSTemporaryDirectory() + "stadiumcloud-archive-" + UUID().uuidString + ".tar")
    }
}
