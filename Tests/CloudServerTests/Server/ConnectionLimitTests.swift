import CloudCore
@testable import CloudHTTP
import Foundation
import HummingbirdTesting
import NIOCore
import Testing

/// The bounds on open connections (docs/RELIABILITY.md, "Connections"): past the maximum a new connection is answered
/// 503 TRY_AGAIN_LATER at once and closed, past one client's share 503 THROTTLED, and a connection that leaves frees its
/// place; a request body slower than its pace is answered 408. Those two wait for the server's own check, under a second
/// each (the pace is kept by the event loop's timers); the pace itself is tested on a clock the test moves
/// (`BodyClockTests`). The head and idle timeouts, and the same under load, are measured by the
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
        try await TestServer.run(
            .live,
            configure: {
                $0.connections.maximumPerAddress = 2
                $0.connections.uncappedAddresses = []
            }
        ) { server in
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
        // A body that stops coming: below the minimum rate once its slack is spent (an unauthenticated client holding
        // the connection).
        BodyPace(deadline: .seconds(60), minimumBytesPerSecond: 1000, slack: .milliseconds(300)),
        // A body past its deadline.
        BodyPace(deadline: .milliseconds(300), minimumBytesPerSecond: 0),
    ])
    func aSlowRequestBodyIsAnswered408AndTheConnectionClosed(pace: BodyPace) async throws {
        try await TestServer.run(.live, configure: { $0.connections.body = pace }) { server in
            let connection = try RawConnection(port: try #require(server.client.port))
            defer { connection.close() }
            connection.send("POST \(TestServer.base)/private/records/lookup HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n{")
            // Nothing more is sent: the answer comes when the server's own check finds the body too slow.
            let answer = await connection.receiveUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
            #expect(answer.contains("BAD_REQUEST"))
            #expect(answer.contains(pace.minimumBytesPerSecond > 0 ? "slower than 1000 bytes a second" : "took longer than"))
        }
    }
}

/// A body's pace, on a clock the test moves: a trickle is cut once it falls behind the minimum rate by more than the
/// slack, a body at the rate never is, time the server does not read is not the client's, and an upload has its own.
@Suite struct BodyClockTests {
    let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    func at(_ milliseconds: Int64) -> NIODeadline { self.start + .milliseconds(milliseconds) }

    @Test func aTrickleFallsBehindTheMinimumRateAndIsCutAfterItsSlack() {
        var clock = BodyClock(pace: BodyPace(deadline: .seconds(60), minimumBytesPerSecond: 1000, slack: .seconds(10)), now: self.at(0))
        // 10 bytes every 2 s earn 10 ms each: the slack runs out after about 10 s.
        var cut: Int64?
        for second in stride(from: 2, through: 20, by: 2) where cut == nil {
            clock.received(10, now: self.at(Int64(second) * 1000))
            if clock.tooSlow(now: self.at(Int64(second) * 1000)) != nil { cut = Int64(second) }
        }
        #expect(cut == 12)
        #expect(clock.tooSlow(now: self.at(12_000))?.contains("slower than 1000 bytes a second") == true)
    }

    @Test func aBodyAtTheRateIsNeverCutAndTheDeadlineStillHolds() {
        var clock = BodyClock(pace: BodyPace(deadline: .seconds(30), minimumBytesPerSecond: 1000, slack: .seconds(10)), now: self.at(0))
        for second in 1...29 {
            clock.received(1000, now: self.at(Int64(second) * 1000))
            #expect(clock.tooSlow(now: self.at(Int64(second) * 1000)) == nil, "second \(second)")
        }
        #expect(clock.tooSlow(now: self.at(30_000))?.contains("took longer than 30 s") == true)
    }

    @Test func timeTheServerDoesNotReadIsNotTheClients() {
        var clock = BodyClock(pace: BodyPace(deadline: .seconds(5), minimumBytesPerSecond: 1000, slack: .seconds(1)), now: self.at(0))
        clock.serverStoppedReading(now: self.at(500))
        #expect(clock.tooSlow(now: self.at(20_000)) == nil)
        clock.serverReads(now: self.at(20_000))
        // 19.5 s not reading moved both deadlines on: the slack ends at 20.5 s, the whole body at 24.5 s.
        #expect(clock.tooSlow(now: self.at(20_400)) == nil)
        #expect(clock.tooSlow(now: self.at(20_500)) != nil)
    }

    @Test func anUploadHasItsOwnPace() {
        var limits = ConnectionLimits()
        limits.body = BodyPace(deadline: .milliseconds(200), minimumBytesPerSecond: 0)
        limits.uploadBody = BodyPace(deadline: .seconds(60), minimumBytesPerSecond: 0)
        #expect(ConnectionGuard.pace(forPath: "/assets/upload/abc?c=x", limits).deadline == .seconds(60))
        #expect(ConnectionGuard.pace(forPath: "/console/import/upload", limits).deadline == .seconds(60))
        #expect(ConnectionGuard.pace(forPath: "/database/1/c/development/private/records/modify", limits).deadline == .milliseconds(200))
        #expect(ConnectionGuard.pace(forPath: nil, limits).deadline == .milliseconds(200))
    }
}
