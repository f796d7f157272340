import CloudCore
import CloudHTTP
import Foundation
import HummingbirdTesting
import Testing

/// The bound on open connections (docs/RELIABILITY.md, "Connections"): past it a new connection is answered 503
/// TRY_AGAIN_LATER at once and closed, and a connection that leaves frees its place. The head and idle timeouts need
/// time to pass: the `slow-clients` fault scenario measures them.
@Suite(.bounded) struct ConnectionLimitTests {
    @Test func aConnectionPastTheMaximumIsAnsweredTryAgainLaterAndClosed() async throws {
        try await TestServer.run(.live, configure: { $0.connections.maximum = 2 }) { server in
            let port = try #require(server.client.port)
            // Kept-alive connections answered one after another, until one is too many (the test client may hold one).
            var held: [RawConnection] = []
            defer { for connection in held { connection.close() } }
            var answer = ""
            while held.count < 4 {
                let connection = try RawConnection(port: port)
                held.append(connection)
                answer = await connection.get("/health")
                if !answer.hasPrefix("HTTP/1.1 200") { break }
            }
            #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer)")
            #expect(answer.lowercased().contains("retry-after: 1"))
            let json = try #require(answer.firstIndex(of: "{").flatMap { start in answer.lastIndex(of: "}").map { answer[start...$0] } })
            let body = try JSONValue.parse(Array(json.utf8))
            #expect(body["serverErrorCode"] == "TRY_AGAIN_LATER")
            for connection in held { connection.close() }
            held = []
            try await eventually("a place is free again", on: server.configuration.signals.connectionPlaceFreed) {
                let next = try RawConnection(port: port)
                defer { next.close() }
                next.send("GET /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
                return await next.receiveUntilClosed().hasPrefix("HTTP/1.1 200")
            }
        }
    }
}
