import CloudCore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct AssetsAPITests {
    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) } }
    static func hex(_ bytes: [UInt8]) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

    /// The path and query of an absolute URL the server handed out.
    static func path(_ url: String) -> String {
        let afterScheme = url.dropFirst("http://".count)
        return String(afterScheme[afterScheme.firstIndex(of: "/")!...])
    }

    static func uploadURL(_ server: TestServer, as account: TestAccount) async throws -> String {
        let reply = try await server.call("assets/upload", ["tokens": [["recordType": "VisitPhoto", "fieldName": "photo"]]], as: account)
        #expect(reply.status == 200, "\(reply.json)")
        return try #require(reply.json["tokens"]?[0]?["url"]?.stringValue)
    }

    static func send(_ server: TestServer, _ url: String, _ body: [UInt8]? = nil, method: HTTPRequest.Method = .post, headers: HTTPFields = [:]) async throws -> TestResponse {
        try await server.client.execute(uri: Self.path(url), method: method, headers: headers, body: body.map { ByteBuffer(bytes: $0) }) { $0 }
    }

    @Test func uploadSaveFetchAndDownloadWithRanges() async throws {
        try await TestServer.run { server in
            let data = Self.bytes(300_000)
            let url = try await Self.uploadURL(server, as: server.alice)
            let uploaded = try await Self.send(server, url, data, headers: [HTTPField.Name("X-StadiumCloud-Checksum")!: Self.hex(data)])
            #expect(uploaded.status == .ok)
            let single = try JSONValue.parse(uploaded.body.readableBytesView)["singleFile"]
            #expect(single?["fileChecksum"]?.stringValue == Self.hex(data))
            #expect(single?["size"] == 300_000)

            let saved = try await server.modify([["operationType": "create", "record": ["recordName": "p1", "recordType": "VisitPhoto", "fields": [
                "photo": ["value": try #require(single)], "caption": ["value": "the view"],
            ]]]])
            #expect(saved.status == 200, "\(saved.json)")
            let photo = try #require(saved.records.first?["fields"]?["photo"])
            #expect(photo["type"] == "ASSETID")
            #expect(photo["value"]?["receipt"] == nil)
            let download = try #require(photo["value"]?["downloadURL"]?.stringValue)
            #expect(download.contains("${f}"))

            let lookup = try await server.call("records/lookup", ["records": [["recordName": "p1"]]], as: server.alice)
            let fetched = try #require(lookup.records.first?["fields"]?["photo"]?["value"]?["downloadURL"]?.stringValue).replacingOccurrences(of: "${f}", with: "photo.jpg")
            let whole = try await Self.send(server, fetched, method: .get)
            #expect(whole.status == .ok)
            #expect(Array(whole.body.readableBytesView) == data)
            #expect(whole.headers[.eTag] == "\"\(Self.hex(data))\"")
            #expect(whole.headers[.cacheControl]?.contains("immutable") == true)
            let part = try await Self.send(server, fetched, method: .get, headers: [.range: "bytes=100-199"])
            #expect(part.status == .partialContent)
            #expect(Array(part.body.readableBytesView) == Array(data[100..<200]))
            #expect(part.headers[.contentRange] == "bytes 100-199/300000")
            let cached = try await Self.send(server, fetched, method: .get, headers: [.ifNoneMatch: "\"\(Self.hex(data))\""])
            #expect(cached.status == .notModified)
            let altered = try await Self.send(server, fetched.replacingOccurrences(of: Self.hex(data), with: String(repeating: "0", count: 64)), method: .get)
            #expect(altered.status == .forbidden)
        }
    }

    @Test func anInterruptedUploadResumesFromTheServersOffset() async throws {
        try await TestServer.run { server in
            let data = Self.bytes(500_000)
            let url = try await Self.uploadURL(server, as: server.alice)
            let length = HTTPField.Name("Upload-Length")!
            let offset = HTTPField.Name("Upload-Offset")!
            let first = try await Self.send(server, url, Array(data[..<200_000]), headers: [length: "500000", offset: "0"])
            #expect(first.status == .ok)
            #expect(first.headers[offset] == "200000")
            let asked = try await Self.send(server, url, method: .head)
            #expect(asked.headers[offset] == "200000")
            let wrongPlace = try await Self.send(server, url, [1, 2, 3], headers: [length: "500000", offset: "5"])
            #expect(wrongPlace.status.code == 409)
            let rest = try await Self.send(server, url, Array(data[200_000...]), headers: [length: "500000", offset: "200000"])
            #expect(try JSONValue.parse(rest.body.readableBytesView)["singleFile"]?["fileChecksum"]?.stringValue == Self.hex(data))
        }
    }

    @Test func badUploadsAreRefusedAndStoreNothing() async throws {
        try await TestServer.run(configure: { $0.maxAssetBytes = 100_000 }) { server in
            let url = try await Self.uploadURL(server, as: server.alice)
            let mismatch = try await Self.send(server, url, Self.bytes(1000), headers: [HTTPField.Name("X-StadiumCloud-Checksum")!: String(repeating: "a", count: 64)])
            #expect(mismatch.status == .badRequest)
            let tooBig = try await Self.send(server, url, Self.bytes(150_000))
            #expect(tooBig.status.code == 413)
            #expect(String(buffer: tooBig.body).contains("QUOTA_EXCEEDED"))
            let forged = try await Self.send(server, url.replacingOccurrences(of: "c=", with: "c=x"), Self.bytes(10))
            #expect(forged.status == .forbidden)
            // An asset that was never uploaded here cannot be referenced.
            let unknown = try await server.modify([["operationType": "create", "record": ["recordName": "p", "recordType": "VisitPhoto", "fields": [
                "photo": ["value": ["fileChecksum": .string(String(repeating: "b", count: 64)), "size": 10], "type": "ASSET"],
            ]]]])
            #expect(unknown.errorCode == "BAD_REQUEST")
        }
    }

    @Test func anotherAccountCannotUseYourReceipt() async throws {
        try await TestServer.run { server in
            let data = Self.bytes(5000)
            let url = try await Self.uploadURL(server, as: server.alice)
            let uploaded = try await Self.send(server, url, data)
            let single = try #require(try JSONValue.parse(uploaded.body.readableBytesView)["singleFile"])
            let stolen = try await server.modify([["operationType": "create", "record": ["recordName": "p", "recordType": "VisitPhoto", "fields": [
                "photo": ["value": single, "type": "ASSET"],
            ]]]], as: server.bob)
            #expect(stolen.errorCode == "BAD_REQUEST")
            let withoutReceipt = try await server.modify([["operationType": "create", "record": ["recordName": "p", "recordType": "VisitPhoto", "fields": [
                "photo": ["value": ["fileChecksum": .string(Self.hex(data)), "size": 5000], "type": "ASSET"],
            ]]]], as: server.bob)
            #expect(withoutReceipt.errorCode == "BAD_REQUEST")
        }
    }
}
