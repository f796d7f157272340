import CloudCore
import CloudHTTP
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// The asset flow with real clients against a listening server: curl sends `Expect: 100-continue` on large bodies.
@Suite(.serialized, .bounded) struct AssetClientTests {
    /// Runs curl verbosely; returns its standard output and its trace (standard error). It waits for curl on a thread
    /// of its own: blocking one of Swift's cooperative threads (two here) starved the server in this process.
    static func curl(_ arguments: [String]) async throws -> (output: String, trace: String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try Self.blockingCurl(arguments) }) }
        }
    }

    static func blockingCurl(_ arguments: [String]) throws -> (output: String, trace: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-sv", "--max-time", "60"] + arguments
        let output = Pipe()
        let trace = FileManager.default.temporaryDirectory.appendingPathComponent("curl-trace-\(UUID().uuidString)")
        FileManager.default.createFile(atPath: trace.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: trace) }
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: trace)
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (String(decoding: data, as: UTF8.self), (try? String(contentsOf: trace, encoding: .utf8)) ?? "")
    }

    static func peakRSSKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").first { $0.hasPrefix("VmHWM") }.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    }

    @Test func curlUploadsALargeFileWithoutStallingOrBuffering() async throws {
        try await TestServer.run(.live, configure: { $0.maxAssetBytes = 1 << 30 }) { server in
            let port = try #require(server.client.port)
            let url = try await server.uploadURL(as: server.alice)
            let local = "http://127.0.0.1:\(port)" + TestData.path(url)
            let file = NSTemporaryDirectory() + "stadiumcloud-curl-\(UUID().uuidString).bin"
            defer { try? FileManager.default.removeItem(atPath: file) }
            // 256 MiB: more than this server should ever hold of one upload.
            let megabyte = Data(TestData.bytes(1 << 20))
            FileManager.default.createFile(atPath: file, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            for _ in 0..<256 { handle.write(megabyte) }
            try handle.close()

            let before = Self.peakRSSKiB()
            let (output, trace) = try await Self.curl([
                "-T", file, "-X", "POST", "-w", "\n%{http_code}", "-H", "Content-Type: application/octet-stream", local,
            ])
            #expect(trace.contains("Expect: 100-continue"))
            #expect(trace.contains("HTTP/1.1 100 Continue"), "the server must answer 100 Continue, or curl waits a second")
            let lines = output.split(separator: "\n")
            #expect(lines.last == "200", "\(output.prefix(300))")
            let reply = try JSONValue.parse(Array(lines.first.map(String.init)?.utf8 ?? "".utf8))
            #expect(reply["singleFile"]?["size"] == .int(256 << 20))
            // VmHWM is the whole test process's, and other suites run beside this one (loading every games file
            // peaks near 200 MiB on a busy machine), so the bound is the file: the upload was never held whole.
            #expect(Self.peakRSSKiB() - before < 256 * 1024, "the upload was not held in memory")
        }
    }

    @Test func downloadURLsForAnotherAccountOrPastTheirTimeAreDenied() async throws {
        let time = ManualClock()
        try await TestServer.run(configure: {
            $0.downloadURLLifetimeSeconds = 1; $0.clock = time.clock
        }) { server in
            let asset = try await server.upload(TestData.bytes(1000))
            #expect(try await server.savePhoto("p", asset).status == 200)
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "p"]]], as: server.alice)
            let url = try #require(lookup.records.first?["fields"]?["photo"]?["value"]?["downloadURL"]?.stringValue)
            #expect(try await server.send(url, method: .get).status == .ok)
            // The same asset under another account's owner: the signature does not cover it.
            let owner = try #require(url.split(separator: "/").first { $0.hasPrefix("db") })
            let elsewhere = url.replacingOccurrences(of: "/\(owner)/", with: "/db999999/")
            #expect(try await server.send(elsewhere, method: .get).status == .forbidden)
            time.advance(by: .milliseconds(1001))
            #expect(try await server.send(url, method: .get).status == .forbidden)
        }
    }
}
