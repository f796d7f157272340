import CloudCore
import CloudHTTP
import Foundation
import HummingbirdTesting
import Testing

/// The bounds on open connections (docs/RELIABILITY.md, "Connections"): past the maximum a new connection is answered
/// 503 TRY_AGAIN_LATER at once and closed, past one client's share 503 THROTTLED, and a connection that leaves frees its
/// place; a request body slower than its pace is answered 408. The body tests take real time, under a second each: the
/// pace is kept by the event loop's timers. The head and idle timeouts, and the same under load, are measured by the
/// `slow-clients` and `slow-bodies` fault scenarios.
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

    @Test func oneAddressPastItsShareIsThrottledWhileAnotherIsServed() async throws {
        try await TestServer.run(.live, configure: {
            $0.connections.maximumPerAddress = 2
            $0.connections.uncappedAddresses = []
        }) { server in
            let port = try #require(server.client.port)
            let held = try (0..<2).map { _ in try RawConnection(port: port, from: "127.0.0.2") }
            defer { for connection in held { connection.close() } }
            for connection in held { #expect(await connection.get("/health").hasPrefix("HTTP/1.1 200")) }
            let third = try RawConnection(port: port, from: "127.0.0.2")
            defer { third.close() }
            let answer = await third.get("/health")
            #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer)")
            #expect(answer.contains("THROTTLED"))
            let other = try RawConnection(port: port, from: "127.0.0.3")
            defer { other.close() }
            #expect(await other.get("/health").hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test(arguments: [
        // A trickle below the minimum rate (an unauthenticated client holding the connection).
        BodyPace(deadline: .seconds(60), minimumBytesPerSecond: 1000, slack: .milliseconds(300)),
        // A body at a fine rate that takes longer than its deadline.
        BodyPace(deadline: .milliseconds(300), minimumBytesPerSecond: 0),
    ])
    func aSlowRequestBodyIsAnswered408AndTheConnectionClosed(pace: BodyPace) async throws {
        try await TestServer.run(.live, configure: { $0.connections.body = pace }) { server in
            let connection = try RawConnection(port: try #require(server.client.port))
            defer { connection.close() }
            connection.send("POST \(TestServer.base)/private/records/lookup HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n{")
            let stopDripping = Self.drip(into: connection)
            defer { stopDripping() }
            let answer = await connection.receiveUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
            #expect(answer.contains("BAD_REQUEST"))
            #expect(answer.contains(pace.minimumBytesPerSecond > 0 ? "slower than 1000 bytes a second" : "took longer than"))
        }
    }

    @Test func anUploadHasItsOwnPace() async throws {
        try await TestServer.run(.live, configure: {
            $0.connections.body = BodyPace(deadline: .milliseconds(200), minimumBytesPerSecond: 0)
            $0.connections.uploadBody = BodyPace(deadline: .seconds(60), minimumBytesPerSecond: 0)
        }) { server in
            // Past the JSON bodies' deadline, within the uploads': the upload (refused for its URL) is read to its end, and
            // the connection serves the next request.
            let connection = try RawConnection(port: try #require(server.client.port))
            defer { connection.close() }
            connection.send("POST /assets/upload/nothing?c=x HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nab")
            try await Task.sleep(for: .milliseconds(400))
            connection.send("cdeGET /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            let answers = await connection.receiveUntilClosed()
            #expect(answers.hasPrefix("HTTP/1.1 403"), "\(answers)")
            #expect(answers.contains("HTTP/1.1 200"), "\(answers)")
        }
    }

    /// Sends a byte every 50 ms until stopped (or the server closes the connection); stopping waits for the last send,
    /// so the descriptor is never written after the test closes it.
    static func drip(into connection: RawConnection) -> @Sendable () -> Void {
        let stop = ManagedAtomicFlag()
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !stop.isSet {
                Thread.sleep(forTimeInterval: 0.05)
                connection.send(" ")
            }
            stopped.signal()
        }
        return {
            stop.set()
            stopped.wait()
        }
    }
}
