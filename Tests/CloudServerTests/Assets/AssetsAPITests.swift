import CloudCore
import CloudHTTP
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite(.bounded) struct AssetsAPITests {
    @Test func uploadSaveFetchAndDownloadWithRanges() async throws {
        try await TestServer.run { server in
            let data = TestData.bytes(300_000)
            let url = try await server.uploadURL(as: server.alice)
            let uploaded = try await server.send(url, data, headers: [HTTPField.Name("X-StadiumCloud-Checksum")!: TestData.hex(data)])
            #expect(uploaded.status == .ok)
            let single = try JSONValue.parse(uploaded.body.readableBytesView)["singleFile"]
            #expect(single?["fileChecksum"]?.stringValue == TestData.hex(data))
            #expect(single?["size"] == 300_000)

            let saved = try await server.modify([
                [
                    "operationType": "create",
                    "record": [
                        "recordName": "p1", "recordType": "VisitPhoto",
                        "fields": [
                            "photo": ["value": try #require(single)], "caption": ["value": "the view"],
                        ],
                    ],
                ]
            ])
            #expect(saved.status == 200, "\(saved.json)")
            let photo = try #require(saved.records.first?["fields"]?["photo"])
            #expect(photo["type"] == "ASSETID")
            #expect(photo["value"]?["receipt"] == nil)
            let download = try #require(photo["value"]?["downloadURL"]?.stringValue)
            #expect(download.contains("${f}"))

            // A page of changes copies the record's stored answer, but an asset still gets its download URL.
            let page = try await server.call("changes/zone", ["zones": [["zoneID": ["zoneName": "_defaultZone"]]]], as: server.alice)
            let paged = try #require(page.json["zones"]?[0]?["records"]?[0]?["fields"]?["photo"]?["value"])
            #expect(paged["downloadURL"]?.stringValue?.contains("${f}") == true)
            #expect(paged["fileChecksum"]?.stringValue == TestData.hex(data))

            let lookup = try await server.call("records/lookup", ["records": [["recordName": "p1"]]], as: server.alice)
            let fetched = try #require(lookup.records.first?["fields"]?["photo"]?["value"]?["downloadURL"]?.stringValue).replacingOccurrences(
                of: "${f}", with: "photo.jpg")
            let whole = try await server.send(fetched, method: .get)
            #expect(whole.status == .ok)
            #expect(Array(whole.body.readableBytesView) == data)
            #expect(whole.headers[.eTag] == "\"\(TestData.hex(data))\"")
            #expect(whole.headers[.cacheControl]?.contains("immutable") == true)
            let part = try await server.send(fetched, method: .get, headers: [.range: "bytes=100-199"])
            #expect(part.status == .partialContent)
            #expect(Array(part.body.readableBytesView) == Array(data[100..<200]))
            #expect(part.headers[.contentRange] == "bytes 100-199/300000")
            let cached = try await server.send(fetched, method: .get, headers: [.ifNoneMatch: "\"\(TestData.hex(data))\""])
            #expect(cached.status == .notModified)
            let altered = try await server.send(
                fetched.replacingOccurrences(of: TestData.hex(data), with: String(repeating: "0", count: 64)), method: .get)
            #expect(altered.status == .forbidden)
        }
    }

    @Test func anInterruptedUploadResumesFromTheServersOffset() async throws {
        try await TestServer.run { server in
            let data = TestData.bytes(500_000)
            let url = try await server.uploadURL(as: server.alice)
            let length = HTTPField.Name("Upload-Length")!
            let offset = HTTPField.Name("Upload-Offset")!
            let first = try await server.send(url, Array(data[..<200_000]), headers: [length: "500000", offset: "0"])
            #expect(first.status == .ok)
            #expect(first.headers[offset] == "200000")
            let asked = try await server.send(url, method: .head)
            #expect(asked.headers[offset] == "200000")
            let wrongPlace = try await server.send(url, [1, 2, 3], headers: [length: "500000", offset: "5"])
            #expect(wrongPlace.status.code == 409)
            let rest = try await server.send(url, Array(data[200_000...]), headers: [length: "500000", offset: "200000"])
            #expect(try JSONValue.parse(rest.body.readableBytesView)["singleFile"]?["fileChecksum"]?.stringValue == TestData.hex(data))
        }
    }

    @Test func badUploadsAreRefusedAndStoreNothing() async throws {
        try await TestServer.run(configure: { $0.maxAssetBytes = 100_000 }) { server in
            let url = try await server.uploadURL(as: server.alice)
            let mismatch = try await server.send(
                url, TestData.bytes(1000), headers: [HTTPField.Name("X-StadiumCloud-Checksum")!: String(repeating: "a", count: 64)])
            #expect(mismatch.status == .badRequest)
            let tooBig = try await server.send(url, TestData.bytes(150_000))
            #expect(tooBig.status.code == 413)
            #expect(String(buffer: tooBig.body).contains("QUOTA_EXCEEDED"))
            let forged = try await server.send(url.replacingOccurrences(of: "c=", with: "c=x"), TestData.bytes(10))
            #expect(forged.status == .forbidden)
            // An asset that was never uploaded here cannot be referenced.
            let unknown = try await server.modify([
                [
                    "operationType": "create",
                    "record": [
                        "recordName": "p", "recordType": "VisitPhoto",
                        "fields": [
                            "photo": ["value": ["fileChecksum": .string(String(repeating: "b", count: 64)), "size": 10], "type": "ASSET"]
                        ],
                    ],
                ]
            ])
            #expect(unknown.anyErrorCode == "BAD_REQUEST")
        }
    }

    @Test func anotherAccountCannotUseYourReceipt() async throws {
        try await TestServer.run { server in
            let data = TestData.bytes(5000)
            let url = try await server.uploadURL(as: server.alice)
            let uploaded = try await server.send(url, data)
            let single = try #require(try JSONValue.parse(uploaded.body.readableBytesView)["singleFile"])
            let stolen = try await server.modify(
                [
                    [
                        "operationType": "create",
                        "record": [
                            "recordName": "p", "recordType": "VisitPhoto",
                            "fields": [
                                "photo": ["value": single, "type": "ASSET"]
                            ],
                        ],
                    ]
                ], as: server.bob)
            #expect(stolen.anyErrorCode == "BAD_REQUEST")
            let withoutReceipt = try await server.modify(
                [
                    [
                        "operationType": "create",
                        "record": [
                            "recordName": "p", "recordType": "VisitPhoto",
                            "fields": [
                                "photo": ["value": ["fileChecksum": .string(TestData.hex(data)), "size": 5000], "type": "ASSET"]
                            ],
                        ],
                    ]
                ], as: server.bob)
            #expect(withoutReceipt.anyErrorCode == "BAD_REQUEST")
        }
    }
}
