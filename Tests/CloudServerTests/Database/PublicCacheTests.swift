import CloudCore
@testable import CloudHTTP
import CloudPostgres
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// The cacheable reads of the public database (docs/SCALING.md, "Caches in front"): positions as plain numbers, an
/// answer per (zone, from, to) that never needs to change, signed so a device trusts the bytes and not the cache.
@Suite(.bounded) struct PublicCacheTests {
    static let base = "/public/1/iCloud.com.sportstime.test/development"

    struct Answer {
        var status: Int
        var headers: HTTPFields
        var body: [UInt8]
        var json: JSONValue { (try? JSONValue.parse(self.body)) ?? .null }
    }

    static func get(_ server: TestServer, _ path: String) async throws -> Answer {
        try await server.client.execute(uri: Self.base + path, method: .get) { response in
            Answer(status: Int(response.status.code), headers: response.headers, body: Array(response.body.readableBytesView))
        }
    }

    @Test func rangesOfChangesAreSignedImmutableAndSkipNothing() async throws {
        let key = P256.Signing.PrivateKey()
        try await TestServer.run(configure: { $0.publicSnapshots.signingKey = key }) { server in
            #expect(try await server.modify([Op.create("a", ["n": 1]), Op.create("b", ["n": 2])], database: "public", signed: true).anyError == nil)
            let versions = try await Self.get(server, "/versions")
            #expect(versions.status == 200 && versions.headers[.cacheControl] == "public, max-age=10")
            let zone = try #require(versions.json["zones"]?.arrayValue?.first { $0["zoneName"] == "_defaultZone" })
            let head = try #require(zone["head"]?.int64Value)
            let history = try #require(versions.json["history"]?.int64Value)
            // A device that starts at 0 gets both; the answer is signed with the operator's key and cacheable for ever.
            let first = try await Self.get(server, "/changes/_defaultZone?from=0&to=\(head)&history=\(history)")
            #expect(first.status == 200 && first.headers[.cacheControl] == "public, max-age=31536000, immutable")
            #expect(first.json["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["a", "b"])
            #expect(first.json["end"]?.int64Value == head)
            let signature = try #require(first.headers[PublicCacheController.signature]).split(separator: " ")
            #expect(signature.first.map(String.init) == PublicSnapshot.keyID(of: key.publicKey))
            let der = try #require(Data(base64Encoded: String(signature[1])))
            #expect(key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: first.body))

            // Later changes: an edit of a, a deletion of b. The next range has both (b as a tombstone).
            let a = try #require(first.json["records"]?[0]?["recordChangeTag"]?.stringValue)
            #expect(
                try await server.modify(
                    [Op.typed("update", "a", tag: a, fields: ["n": ["value": 3]]), Op.typed("forceDelete", "b")], database: "public", signed: true
                ).anyError == nil)
            let newHead = try #require(try await Self.get(server, "/versions").json["zones"]?.arrayValue?.first { $0["zoneName"] == "_defaultZone" }?["head"]?.int64Value)
            let next = try await Self.get(server, "/changes/_defaultZone?from=\(head)&to=\(newHead)&history=\(history)")
            let changed = next.json["records"]?.arrayValue ?? []
            #expect(changed.map { "\($0["recordName"]!.stringValue!) \($0["deleted"]!.boolValue!)" } == ["a false", "b true"])

            // Bad input, a position past the head, another history: clear errors, never cached.
            for (path, status) in [
                ("/changes/_defaultZone?from=0&history=\(history)", 400), ("/changes/_defaultZone?from=0&to=\(newHead + 1000)&history=\(history)", 400),
                ("/changes/_defaultZone?from=\(head)&to=0&history=\(history)", 400), ("/changes/nowhere?from=0&to=0&history=\(history)", 404),
                ("/changes/_defaultZone?from=0&to=\(newHead)&history=\(history + 1)", 410),
            ] {
                let answer = try await Self.get(server, path)
                #expect(answer.status == status && answer.headers[.cacheControl] == nil, "\(path): \(answer.status) \(answer.json)")
            }
            #expect(try await Self.get(server, "/snapshot").status == 404)
        }
    }

    /// A position before the purge horizon, or of another history, is sent to the snapshot the server serves.
    @Test func anExpiredPositionIsSentToTheSnapshot() async throws {
        let file = NSTemporaryDirectory() + "public-\(UUID().uuidString).snapshot"
        try Data("STADIUMCLOUD-SNAPSHOT 1\nstand-in\n".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await TestServer.run(configure: { $0.publicSnapshots.file = file }) { server in
            #expect(try await server.modify([Op.create("gone", ["n": 1])], database: "public", signed: true).anyError == nil)
            #expect(try await server.modify([Op.typed("forceDelete", "gone")], database: "public", signed: true).anyError == nil)
            _ = try await server.dependencies.records.purgeTombstones(olderThanMs: Timestamp.now + 1_000, logger: TestDatabase.logger)
            let versions = try await Self.get(server, "/versions").json
            let zone = try #require(versions["zones"]?.arrayValue?.first { $0["zoneName"] == "_defaultZone" })
            let (head, horizon, history) = (zone["head"]!.int64Value!, zone["horizon"]!.int64Value!, versions["history"]!.int64Value!)
            #expect(horizon > 0)
            let expired = try await Self.get(server, "/changes/_defaultZone?from=0&to=\(head)&history=\(history)")
            #expect(expired.status == 303 && expired.headers[.location] == Self.base + "/snapshot")
            #expect(try await Self.get(server, "/changes/_defaultZone?from=\(horizon)&to=\(head)&history=\(history)").status == 200)
            let snapshot = try await Self.get(server, "/snapshot")
            #expect(snapshot.status == 200 && snapshot.body == Array("STADIUMCLOUD-SNAPSHOT 1\nstand-in\n".utf8))
        }
    }
}
