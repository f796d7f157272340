import CloudAssets
import CloudCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct AssetLifecycleTests {
    /// Uploads `bytes` as Alice (or `account`) and returns the `singleFile` dictionary.
    static func upload(_ server: TestServer, _ bytes: [UInt8], as account: TestAccount? = nil) async throws -> JSONValue {
        let url = try await AssetsAPITests.uploadURL(server, as: account ?? server.alice)
        let reply = try await AssetsAPITests.send(server, url, bytes)
        let json = try JSONValue.parse(reply.body.readableBytesView)
        return try #require(json["singleFile"], "\(json)")
    }

    static func savePhoto(_ server: TestServer, _ name: String, _ asset: JSONValue, as account: TestAccount? = nil) async throws -> TestServer.Reply {
        try await server.modify([["operationType": "forceReplace", "record": ["recordName": .string(name), "recordType": "VisitPhoto", "fields": [
            "photo": ["value": asset, "type": "ASSET"],
        ]]]], as: account)
    }

    @Test func theAccountQuotaIsEnforcedBeforeBytesAreStored() async throws {
        try await TestServer.run(configure: { $0.accountQuotaBytes = 300_000 }) { server in
            _ = try await Self.upload(server, AssetsAPITests.bytes(200_000))
            let url = try await AssetsAPITests.uploadURL(server, as: server.alice)
            let over = try await AssetsAPITests.send(server, url, AssetsAPITests.bytes(150_000))
            #expect(over.status.code == 413)
            #expect(String(buffer: over.body).contains("quota"))
            // Bob's quota is his own.
            _ = try await Self.upload(server, AssetsAPITests.bytes(200_000), as: server.bob)
        }
    }

    /// A crash between moving an upload into place and committing its row leaves bytes no row knows: the
    /// collector removes them; bytes with a row stay.
    @Test func theCollectorRemovesBlobsACrashLeftWithoutARow() async throws {
        try await TestServer.run { server in
            let kept = try await Self.upload(server, AssetsAPITests.bytes(10_000))
            let assets = server.dependencies.assets
            let bytes = AssetsAPITests.bytes(30_000)
            // What a crash after `publish` and before the row's commit leaves behind.
            _ = try await assets.append(AsyncStream { $0.yield(ByteBuffer(bytes: bytes)); $0.finish() }, to: "crashed", at: 0, maxSize: 1 << 20)
            let stranded = try await assets.complete(upload: "crashed", owner: "db\(try await Self.aliceDatabaseID(server))", expectedChecksum: nil)
            #expect(try await assets.blobs(olderThan: -60).count == 2)
            let blobs = try await assets.blobs(olderThan: -60).compactMap { blob in Int64(blob.owner.dropFirst(2)).map { ($0, blob.checksum) } }
            let removed = try await server.dependencies.records.collectOrphanBlobs(blobs, logger: TestDatabase.logger) { databaseID, checksum in
                try await assets.remove(owner: "db\(databaseID)", checksum: checksum)
            }
            #expect(removed == 1)
            let left = try await assets.blobs(olderThan: -60).map(\.checksum)
            #expect(left == [kept["fileChecksum"]?.stringValue])
            #expect(!left.contains(stranded.checksum))
        }
    }

    static func aliceDatabaseID(_ server: TestServer) async throws -> Int64 {
        let database = try await server.dependencies.records.database(
            container: "iCloud.com.sportstime.test", environment: "development", scope: .private, owner: server.alice.account, logger: TestDatabase.logger)
        return database.id
    }

    @Test func theCollectorRemovesOnlyUnreferencedAssets() async throws {
        try await TestServer.run { server in
            let kept = try await Self.upload(server, AssetsAPITests.bytes(10_000))
            let orphan = try await Self.upload(server, AssetsAPITests.bytes(20_000))
            #expect(try await Self.savePhoto(server, "p1", kept).status == 200)
            let records = server.dependencies.records
            let assets = server.dependencies.assets
            let future = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
            func collect() async throws -> Int {
                try await records.collectUnreferencedAssets(storedBeforeMs: future, logger: TestDatabase.logger) { databaseID, checksum in
                    try await assets.remove(owner: "db\(databaseID)", checksum: checksum)
                }
            }
            #expect(try await collect() == 1)
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "p1"]]], as: server.alice)
            let url = try #require(lookup.records.first?["fields"]?["photo"]?["value"]?["downloadURL"]?.stringValue)
            #expect(try await AssetsAPITests.send(server, url, method: .get).status == .ok)
            // The collected asset cannot be referenced any more, even with its (still unexpired) receipt.
            #expect(try await Self.savePhoto(server, "p2", orphan).errorCode == "BAD_REQUEST")

            // Once its record is gone, the kept asset goes too.
            try await server.modify([Op.typed("forceDelete", "p1")])
            #expect(try await collect() == 1)
            #expect(try await AssetsAPITests.send(server, url, method: .get).status == .notFound)
        }
    }

    @Test func rereferenceHandsOutReceiptsForAssetsRecordsHold() async throws {
        try await TestServer.run { server in
            let asset = try await Self.upload(server, AssetsAPITests.bytes(5000))
            #expect(try await Self.savePhoto(server, "p1", asset).status == 200)
            let reply = try await server.call("assets/rereference", ["assets": [["recordName": "p1", "fieldName": "photo"], ["recordName": "nope", "fieldName": "photo"]]], as: server.alice)
            let again = try #require(reply.json["assets"]?[0])
            #expect(again["fileChecksum"] == asset["fileChecksum"])
            #expect(reply.json["assets"]?[1]?["serverErrorCode"] == "NOT_FOUND")
            #expect(try await Self.savePhoto(server, "p2", ["fileChecksum": again["fileChecksum"]!, "size": again["size"]!, "receipt": again["receipt"]!]).status == 200)
        }
    }

    @Test func collectingWhileTheSameBytesAreUploadedAgainNeverLosesThem() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let assets = server.dependencies.assets
            let bytes = AssetsAPITests.bytes(4000)
            let future = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
            let databaseID = try await server.alice.databaseID(server)
            for _ in 0..<20 {
                let url = try await AssetsAPITests.uploadURL(server, as: server.alice)
                async let collected = records.collectUnreferencedAssets(storedBeforeMs: future, logger: TestDatabase.logger) { databaseID, checksum in
                    try await assets.remove(owner: "db\(databaseID)", checksum: checksum)
                }
                async let uploaded = AssetsAPITests.send(server, url, bytes)
                _ = try await (collected, uploaded)
                // Whatever the interleaving: an asset the database knows has its bytes.
                if try await records.assetUsage(of: databaseID, logger: TestDatabase.logger) > 0 {
                    #expect(try await assets.size(owner: "db\(databaseID)", checksum: AssetsAPITests.hex(bytes)) == 4000)
                }
            }
        }
    }
}

extension TestAccount {
    /// The internal id of this account's private database in the test container.
    func databaseID(_ server: TestServer) async throws -> Int64 {
        try await server.dependencies.records.database(
            container: "iCloud.com.sportstime.test", environment: "development", scope: .private, owner: self.account, logger: TestDatabase.logger
        ).id
    }
}
