import CloudCore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import CloudHTTP

@Suite(.bounded) struct MultipartTests {
    static let boundary = "----StadiumCloudBoundary7MA4YWxkTrZu0gW"

    static func body(file: [UInt8], name: String = "files", withTextPartFirst: Bool = true) -> [UInt8] {
        var body: [UInt8] = []
        if withTextPartFirst {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\nthe view\r\n".utf8)
        }
        body += Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"file.file\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                .utf8)
        body += file
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return body
    }

    static func extract(_ body: [UInt8], chunk: Int) async throws -> [UInt8] {
        let chunks = AsyncStream<ByteBuffer> { continuation in
            for start in stride(from: 0, to: body.count, by: chunk) {
                continuation.yield(ByteBuffer(bytes: body[start..<min(start + chunk, body.count)]))
            }
            continuation.finish()
        }
        var out: [UInt8] = []
        for try await part in MultipartFileStream(base: chunks, boundary: Self.boundary) { out += Array(part.readableBytesView) }
        return out
    }

    @Test func extractsTheFilePartWhereverChunksSplit() async throws {
        // File bytes that look like the delimiter's start, to tempt a naive parser.
        let file = Array("\r\n--not-the-boundary\r\n".utf8) + (0..<3000).map { UInt8(truncatingIfNeeded: $0) } + Array("\r\n-".utf8)
        let body = Self.body(file: file)
        for chunk in [1, 2, 3, 7, 13, 64, 100, 1000, body.count] {
            #expect(try await Self.extract(body, chunk: chunk) == file, "chunk size \(chunk)")
        }
        #expect(try await Self.extract(Self.body(file: file, name: "file", withTextPartFirst: false), chunk: 5) == file)
    }

    @Test func aBodyWithoutAFilePartIsBadRequest() async throws {
        let body = Array("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\nx\r\n--\(Self.boundary)--\r\n".utf8)
        await #expect(throws: CloudError.self) { _ = try await Self.extract(body, chunk: 4) }
        await #expect(throws: CloudError.self) { _ = try await Self.extract(Array(Self.body(file: [1, 2, 3]).prefix(120)), chunk: 4) }
        #expect(MultipartFileStream<AsyncStream<ByteBuffer>>.boundary(of: "multipart/form-data; boundary=\"abc\"") == "abc")
        #expect(MultipartFileStream<AsyncStream<ByteBuffer>>.boundary(of: "application/octet-stream") == nil)
    }

    @Test func multipartUploadsWorkOverHTTP() async throws {
        try await TestServer.run { server in
            let file = TestData.bytes(200_000)
            let url = try await server.uploadURL(as: server.alice)
            let reply = try await server.send(url, Self.body(file: file), headers: [.contentType: "multipart/form-data; boundary=\(Self.boundary)"])
            #expect(reply.status == .ok)
            let single = try JSONValue.parse(reply.body.readableBytesView)["singleFile"]
            #expect(single?["fileChecksum"]?.stringValue == TestData.hex(file))
            #expect(single?["size"] == 200_000)
        }
    }

    /// A form read whole (the console's dataset upload): fields and files, content with CRLF and dashes kept, a
    /// body cut short refused.
    @Test func aWholeFormKeepsItsFieldsAndFiles() throws {
        let file = Array("{\r\n\"a\": \"--\(Self.boundary.dropLast())\"\r\n}".utf8)
        let body = Self.body(file: file, name: "dataset")
        let form = try MultipartForm(body, boundary: Self.boundary)
        #expect(form.field("caption") == "the view")
        #expect(form.parts.count == 2 && form.parts[1].filename == "file.file" && Array(form.parts[1].body) == file)
        #expect(throws: CloudError.self) { try MultipartForm(Array(body.dropLast(8)), boundary: Self.boundary) }
        #expect(throws: CloudError.self) { try MultipartForm(Array("not multipart".utf8), boundary: Self.boundary) }
        #expect(
            ConsoleController.datasetPaths(["canonical/stadiums.json", "canonical/games/mlb_2025.json"]) == ["stadiums.json", "games/mlb_2025.json"])
        #expect(ConsoleController.datasetPaths(["stadiums.json"]) == ["stadiums.json"])
        #expect(ConsoleController.datasetPaths(["canonical/../x.json"]) == nil && ConsoleController.datasetPaths(["a/.hidden.json"]) == nil)
        #expect(ConsoleController.datasetPaths(["canonical/notes.txt"]) == nil && ConsoleController.datasetPaths([]) == nil)
    }
}
