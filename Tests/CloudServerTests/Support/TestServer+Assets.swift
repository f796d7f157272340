import CloudCore
import CloudHTTP
import CloudPostgres
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Asset bytes for tests: the same deterministic pattern everywhere, and its SHA-256.
enum TestData {
    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }
    static func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).hexString }

    /// The path and query of an absolute URL the server handed out.
    static func path(_ url: String) -> String {
        let afterScheme = url.dropFirst("http://".count)
        return String(afterScheme[afterScheme.firstIndex(of: "/")!...])
    }
}

/// The asset endpoints: `assets/upload`, the upload and download URLs, a photo record holding an asset.
extension TestServer {
    func uploadURL(as account: TestAccount) async throws -> String {
        let reply = try await self.call("assets/upload", ["tokens": [["recordType": "VisitPhoto", "fieldName": "photo"]]], as: account)
        #expect(reply.status == 200, "\(reply.json)")
        return try #require(reply.json["tokens"]?[0]?["url"]?.stringValue)
    }

    /// Sends to a URL the server handed out (upload or download).
    func send(_ url: String, _ body: [UInt8]? = nil, method: HTTPRequest.Method = .post, headers: HTTPFields = [:]) async throws -> TestResponse {
        try await self.client.execute(uri: TestData.path(url), method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) { $0 }
    }

    /// Uploads `bytes` as Alice (or `account`) and returns the `singleFile` dictionary.
    func upload(_ bytes: [UInt8], as account: TestAccount? = nil) async throws -> JSONValue {
        let url = try await self.uploadURL(as: account ?? self.alice)
        let reply = try await self.send(url, bytes)
        let json = try JSONValue.parse(reply.body.readableBytesView)
        return try #require(json["singleFile"], "\(json)")
    }

    func savePhoto(_ name: String, _ asset: JSONValue, as account: TestAccount? = nil) async throws -> TestServer.Reply {
        try await self.modify(
            [
                [
                    "operationType": "forceReplace",
                    "record": [
                        "recordName": .string(name), "recordType": "VisitPhoto",
                        "fields": [
                            "photo": ["value": asset, "type": "ASSET"]
                        ],
                    ],
                ]
            ], as: account)
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
