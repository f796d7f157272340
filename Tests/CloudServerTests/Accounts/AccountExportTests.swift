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
            try await server.call("zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
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
            await #expect { try await importAccount("carol", from: archive, records: records, assets: assets, logger: logger) }
                throws: { ($0 as? CloudError)?.code == .conflict }
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
            #expect(try AccountArchive.verify(at: good).files.map(\.path).sorted() == ["assets/d1/\(try #require(photo["fileChecksum"]?.stringValue))", "records/d1/z1/000001.json"])

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
                await #expect { try await importAccount("dave", from: file, records: records, assets: assets, logger: logger) }
                    throws: { error in
                        guard let error = error as? CloudError else { return false }
                        return error.code == .badRequest && error.reason.contains(reason)
                    }
            }
            #expect(try await Self.contents(of: dave.account, records, assets).isEmpty)
            #expect(try await AccountExport.of("nobody", records: records, logger: logger) == nil)
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
