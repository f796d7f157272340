import CloudAssets
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct AssetLifecycleTests {
    @Test func theAccountQuotaIsEnforcedBeforeBytesAreStored() async throws {
        try await TestServer.run(configure: { $0.accountQuotaBytes = 300_000 }) { server in
            _ = try await server.upload(TestData.bytes(200_000))
            let url = try await server.uploadURL(as: server.alice)
            let over = try await server.send(url, TestData.bytes(150_000))
            #expect(over.status.code == 413)
            #expect(String(buffer: over.body).contains("quota"))
            // Bob's quota is his own.
            _ = try await server.upload(TestData.bytes(200_000), as: server.bob)
        }
    }

    /// A crash between moving an upload into place and committing its row leaves bytes no row knows: the
    /// collector removes them; bytes with a row stay.
    @Test func theCollectorRemovesBlobsACrashLeftWithoutARow() async throws {
        try await TestServer.run { server in
            let kept = try await server.upload(TestData.bytes(10_000))
            let assets = server.dependencies.assets
            let bytes = TestData.bytes(30_000)
            // What a crash after `publish` and before the row's commit leaves behind.
            _ = try await assets.append(
                AsyncStream {
                    $0.yield(ByteBuffer(bytes: bytes)); $0.finish()
                }, to: "crashed", at: 0, maxSize: 1 << 20)
            let stranded = try await assets.complete(
                upload: "crashed", owner: "db\(try await server.alice.databaseID(server))", expectedChecksum: nil)
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

    @Test func theCollectorRemovesOnlyUnreferencedAssets() async throws {
        try await TestServer.run { server in
            let kept = try await server.upload(TestData.bytes(10_000))
            let orphan = try await server.upload(TestData.bytes(20_000))
            #expect(try await server.savePhoto("p1", kept).status == 200)
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
            #expect(try await server.send(url, method: .get).status == .ok)
            // The collected asset cannot be referenced any more, even with its (still unexpired) receipt.
            #expect(try await server.savePhoto("p2", orphan).anyErrorCode == "BAD_REQUEST")

            // Once its record is gone, the kept asset goes too.
            try await server.modify([Op.typed("forceDelete", "p1")])
            #expect(try await collect() == 1)
            #expect(try await server.send(url, method: .get).status == .notFound)
        }
    }

    @Test func rereferenceHandsOutReceiptsForAssetsRecordsHold() async throws {
        try await TestServer.run { server in
            let asset = try await server.upload(TestData.bytes(5000))
            #expect(try await server.savePhoto("p1", asset).status == 200)
            let reply = try await server.call(
                "assets/rereference", ["assets": [["recordName": "p1", "fieldName": "photo"], ["recordName": "nope", "fieldName": "photo"]]],
                as: server.alice)
            let again = try #require(reply.json["assets"]?[0])
            #expect(again["fileChecksum"] == asset["fileChecksum"])
            #expect(reply.json["assets"]?[1]?["serverErrorCode"] == "NOT_FOUND")
            #expect(
                try await server.savePhoto("p2", ["fileChecksum": again["fileChecksum"]!, "size": again["size"]!, "receipt": again["receipt"]!])
                    .status == 200)
        }
    }

    @Test func collectingWhileTheSameBytesAreUploadedAgainNeverLosesThem() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let assets = server.dependencies.assets
            let bytes = TestData.bytes(4000)
            let future = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
            let databaseID = try await server.alice.databaseID(server)
            for _ in 0..<20 {
                let url = try await server.uploadURL(as: server.alice)
                async let collected = records.collectUnreferencedAssets(storedBeforeMs: future, logger: TestDatabase.logger) { databaseID, checksum in
                    try await assets.remove(owner: "db\(databaseID)", checksum: checksum)
                }
                async let uploaded = server.send(url, bytes)
                _ = try await (collected, uploaded)
                // Whatever the interleaving: an asset the database knows has its bytes.
                let known = try await records.assetUsage(of: databaseID, logger: TestDatabase.logger) > 0
                let size = try? await assets.size(owner: "db\(databaseID)", checksum: TestData.hex(bytes))
                #expect(!known || size == 4000, "the database knows the asset but its bytes are gone")
            }
            // And with no collection racing, the upload is known and stored.
            _ = try await server.send(try await server.uploadURL(as: server.alice), bytes)
            #expect(try await records.assetUsage(of: databaseID, logger: TestDatabase.logger) > 0)
            #expect(try await assets.size(owner: "db\(databaseID)", checksum: TestData.hex(bytes)) == 4000)
        }
    }
}
