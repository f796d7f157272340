import CloudCore
import CloudRuntime
import CloudHTTP
@testable import CloudPostgres
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization
import Testing

/// `changes/wait` and the change broadcast: waiters wake on commits in this process and in others, never miss a
/// change, and cost no query while they wait.
@Suite(.bounded) struct LiveSyncTests {
    static func zoneWait(_ token: String?, timeout: Int = 30) -> JSONValue {
        var zone: [String: JSONValue] = ["zoneID": ["zoneName": "_defaultZone"]]
        if let token { zone["syncToken"] = .string(token) }
        return ["zones": [.object(zone)], "timeout": .int(Int64(timeout))]
    }

    /// Returns once `feed` holds `count` waiters (the request reached its wait).
    static func waiters(_ count: Int, on feed: ChangeFeed) async throws {
        try await eventually("\(count) waiter(s)", on: feed.waitingChanges) { feed.waiting >= count }
    }

    @Test func aWaitAnswersAtOnceWhenTheZoneChangedAndWhenAWriteCommitsLater() async throws {
        try await TestServer.run { server in
            let first = try await server.pull()
            try await server.modify([Op.create("a")])
            // Something changed after the token: no waiting.
            let atOnce = try await server.call("changes/wait", Self.zoneWait(first.token), as: server.alice)
            #expect(atOnce.status == 200)
            #expect(atOnce.json["changed"] == true)
            #expect(atOnce.json["zones"]?[0]?["zoneID"]?["zoneName"] == "_defaultZone")
            // A long poll does not rotate the web auth token (docs/AUTH.md).
            #expect(atOnce.headers[HTTPField.Name("X-Apple-CloudKit-Web-Auth-Token")!] == nil)

            let current = try await server.pull(from: first.token)
            async let waited = server.call("changes/wait", Self.zoneWait(current.token), as: server.alice)
            try await Self.waiters(1, on: server.dependencies.records.changes.feed)
            try await server.modify([Op.create("b")])
            let answer = try await waited
            #expect(answer.json["changed"] == true)
            #expect(try await server.pull(from: current.token).records.map { $0["recordName"] } == ["b"])
            #expect(server.dependencies.records.changes.feed.waiting == 0)
        }
    }

    @Test func aWaitOnTheDatabaseTokenWakesOnAnyZoneAndAnotherAccountsWriteWakesNobody() async throws {
        try await TestServer.run { server in
            let token = try await server.call("changes/database", [:], as: server.alice).json["syncToken"]!
            let feed = server.dependencies.records.changes.feed
            async let waited = server.call("changes/wait", ["syncToken": token, "timeout": 30], as: server.alice)
            try await Self.waiters(1, on: feed)
            // Bob's write is to his own database: Alice's waiter stays asleep.
            try await server.modify([Op.create("bobs")], as: server.bob)
            #expect(feed.waiting == 1)
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
            let answer = try await waited
            #expect(answer.json["changed"] == true)
            // The zones that changed, as docs/SYNC.md promises (the answer had none for a database token).
            #expect(answer.json["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } == ["Trips"], "\(answer.json)")
            // Nothing since: an immediate answer with no zone; without a token (a device's first wait, with the
            // public zones it follows), every zone.
            let after = try #require(try await server.call("changes/database", ["syncToken": token], as: server.alice).json["syncToken"])
            let quiet = try await server.call("changes/wait", ["syncToken": after, "timeout": 0], as: server.alice)
            #expect(quiet.json["changed"] == false && quiet.json["zones"]?.arrayValue?.isEmpty == true, "\(quiet.json)")
            let first = try await server.call("changes/wait", ["publicZones": [], "timeout": 0], as: server.alice)
            #expect(Set(first.json["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } ?? []) == ["_defaultZone", "Trips"])
        }
    }

    @Test func aWaitEndsUnchangedAtItsTimeoutOnTheServersClock() async throws {
        let clock = ManualClock()
        // The database deadline runs on the same clock: far enough out that the advance below never expires it.
        try await TestServer.run(configure: {
            $0.clock = clock.clock
            $0.databaseTimeout = .seconds(3600)
        }) { server in
            let token = try await server.pull().token
            let feed = server.dependencies.records.changes.feed
            let timeout = clock.now + 20_000
            let waited = Task { try await server.call("changes/wait", Self.zoneWait(token, timeout: 20), as: server.alice) }
            try await clock.waitForSleeper(until: timeout)
            clock.advance(by: .seconds(20))
            try await eventually("the wait to end at its timeout", on: feed.waitingChanges) { feed.waiting == 0 }
            let answer = try await waited.value
            #expect(answer.status == 200)
            #expect(answer.json["changed"] == false)
            #expect(answer.json["zones"] == [])
            let immediate = try await server.call("changes/wait", Self.zoneWait(token, timeout: 0), as: server.alice)
            #expect(immediate.json["changed"] == false)
        }
    }

    @Test func badWaitsAreRefusedAndTooManyWaitersAreThrottled() async throws {
        try await TestServer.run(configure: { $0.live.waiters.waitersPerAccount = 2 }) { server in
            let token = try await server.pull().token
            for (body, reason) in [
                (["syncToken": .string(token), "zones": []] as JSONValue, "give either syncToken"),
                (Self.zoneWait(token, timeout: 61), "must be 0 to 60 seconds"),
                (Self.zoneWait(token, timeout: -1), "must be 0 to 60 seconds"),
                (["zones": []], "zones must list 1 to"),
                (["syncToken": .string(token)], "syncToken is a zone token"),
                (Self.zoneWait("garbage"), "syncToken is not valid"),
            ] {
                let reply = try await server.call("changes/wait", body, as: server.alice)
                #expect(reply.status == 400, "\(body)")
                #expect(reply.errorCode == "BAD_REQUEST")
                #expect(reply.json["reason"]?.stringValue?.contains(reason) == true, "\(reply.json)")
            }
            let publicOnPublic = try await server.call("changes/wait", ["publicZones": [], "timeout": 0], database: "public")
            #expect(publicOnPublic.json["reason"]?.stringValue?.contains("publicZones is for a wait on the private database") == true)
            // Another account's token tells nothing and wakes nothing.
            let stolen = try await server.call("changes/wait", Self.zoneWait(token), as: server.bob)
            #expect(stolen.status == 400)

            let feed = server.dependencies.records.changes.feed
            async let one = server.call("changes/wait", Self.zoneWait(token), as: server.alice)
            async let two = server.call("changes/wait", Self.zoneWait(token), as: server.alice)
            try await Self.waiters(2, on: feed)
            let third = try await server.call("changes/wait", Self.zoneWait(token), as: server.alice)
            #expect(third.status == 503)
            #expect(third.errorCode == "THROTTLED")
            // Bob has his own budget.
            let bobToken = try await server.pull(as: server.bob).token
            #expect(try await server.call("changes/wait", Self.zoneWait(bobToken, timeout: 0), as: server.bob).status == 200)
            try await server.modify([Op.create("wake")])
            #expect(try await one.json["changed"] == true)
            #expect(try await two.json["changed"] == true)
        }
    }

    /// A wait must say what it waits on: a body that lost its tokens (or was never sent) would otherwise be answered
    /// "changed" at once, every time, and a device would sync in a loop.
    @Test func aWaitThatNamesNothingToWaitOnIsRefusedAndChangesNothing() async throws {
        try await TestServer.run { server in
            let token = try #require(try await server.call("changes/database", [:], as: server.alice).json["syncToken"])
            let feed = server.dependencies.records.changes.feed
            for rawBody in ["", "{}", #"{"timeout": 5}"#, #"{"syncToken": null, "zones": null}"#] {
                let reply = try await server.call("changes/wait", as: server.alice, rawBody: rawBody, contentType: "application/json")
                #expect(reply.status == 400, "\(rawBody)")
                #expect(reply.errorCode == "BAD_REQUEST", "\(rawBody)")
                #expect(
                    reply.json["reason"]?.stringValue?.contains("needs syncToken (a database token), zones (zone tokens) or publicZones") == true,
                    "\(reply.json)")
                #expect(feed.waiting == 0)
            }
            let since = try await server.call("changes/database", ["syncToken": token], as: server.alice)
            #expect(since.json["zones"]?.arrayValue?.isEmpty == true, "\(since.json)")
        }
    }

    /// A long poll whose client has gone frees its waiter at once, not at its timeout: a device that reconnects is not
    /// THROTTLED by its own abandoned polls (it was, for up to a minute, with or without nginx).
    @Test func aWaitWhoseClientLeftEndsAtOnce() async throws {
        try await TestServer.run(.live, configure: { $0.live.waiters.waitersPerAccount = 1 }) { server in
            let token = try await server.pull().token
            let feed = server.dependencies.records.changes.feed
            let body = JSONWriter.encode(Self.zoneWait(token, timeout: 60))
            let path = "\(TestServer.base)/private/changes/wait?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.alice.webAuthToken)"
            let connection = try RawConnection(port: try #require(server.client.port))
            connection.send(
                "POST \(path) HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            try await Self.waiters(1, on: feed)
            connection.close()
            try await eventually("the abandoned wait ends", on: feed.waitingChanges) { feed.waiting == 0 }
            #expect(try await server.call("changes/wait", Self.zoneWait(token, timeout: 0), as: server.alice).status == 200)
        }
    }

    /// A long poll whose connection is reset (a phone changing network) frees its place as a closed one does, whatever
    /// the moment: a reset right after the request (before the server reaches the wait) or during the wait. The server's
    /// clock never moves, so no wait here ends at its timeout.
    @Test func aWaitWhoseConnectionIsResetEndsAtOnceWhateverTheMoment() async throws {
        let clock = ManualClock()
        let capture = LogCapture()
        let resetRightAfter = 8
        try await TestServer.run(
            .live,
            configure: {
                $0.clock = clock.clock
                $0.databaseTimeout = .seconds(3600)
                $0.live.waiters.waitersPerAccount = resetRightAfter
            }, logger: Logger(label: "test") { _ in capture }
        ) { server in
            let token = try await server.pull().token
            let feed = server.dependencies.records.changes.feed
            let body = JSONWriter.encode(Self.zoneWait(token, timeout: 60))
            let path = "\(TestServer.base)/private/changes/wait?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.alice.webAuthToken)"
            let request = "POST \(path) HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            let port = try #require(server.client.port)
            func endedWaits() -> Int {
                capture.storage.lines.withLock { $0.filter { $0.hasPrefix("request ") && $0.contains("changes/wait") }.count }
            }
            for _ in 0..<resetRightAfter {
                let connection = try RawConnection(port: port)
                connection.send(request)
                connection.reset()
            }
            try await eventually("every wait reset right after its request ends", on: capture.storage.changes) { endedWaits() == resetRightAfter }
            try await eventually("their places are free", on: feed.waitingChanges) { feed.waiting == 0 }

            let during = try RawConnection(port: port)
            during.send(request)
            try await Self.waiters(1, on: feed)
            during.reset()
            try await eventually("the wait reset while waiting ends", on: feed.waitingChanges) { feed.waiting == 0 }
            #expect(try await server.call("changes/wait", Self.zoneWait(token, timeout: 0), as: server.alice).status == 200)
        }
    }

    /// Two server processes on one database: a write through one wakes a waiter on the other, through
    /// PostgreSQL's NOTIFY; when the other's listening connection is killed, it reconnects and wakes its waiters,
    /// so a change made while it was deaf is not missed.
    @Test func aWriteOnOneProcessWakesAWaiterOnAnotherEvenAcrossALostListener() async throws {
        try await TestServer.run { server in
            let otherStore = try await Stores(client: server.dependencies.records.client).records(logger: TestDatabase.logger)
            let other = otherStore.changes
            let feed = other.feed
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await other.run() }
                defer { group.cancelAll() }
                try await eventually("the other process to listen", on: other.countChanges) { other.listenCount >= 1 }
                let database = try await otherStore.database(
                    container: "iCloud.com.sportstime.test", environment: "development", scope: .private, owner: server.alice.account,
                    logger: TestDatabase.logger)
                let waiting = Task {
                    let waiter = try feed.register(databases: [database.id], account: nil)
                    return await waiter.wait(timeout: .seconds(60), clock: .system)
                }
                try await Self.waiters(1, on: feed)
                try await server.modify([Op.create("elsewhere")])
                #expect(try await waiting.value == true)

                // Kill the other process's listening connection, write while it is deaf: it wakes its waiters
                // once it listens again.
                let deaf = Task {
                    let waiter = try feed.register(databases: [database.id], account: nil)
                    return await waiter.wait(timeout: .seconds(60), clock: .system)
                }
                try await Self.waiters(1, on: feed)
                let listens = other.listenCount
                try await server.dependencies.records.client.query(
                    """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE application_name = \(ChangeBroadcast.listenerName) AND datname = current_database()
                    """,
                    logger: TestDatabase.logger)
                try await server.modify([Op.create("while-deaf")])
                #expect(try await deaf.value == true)
                try await eventually("the other process to listen again", on: other.countChanges) { other.listenCount > listens }
            }
        }
    }

    /// A lone process sends no NOTIFY (a save stays one transaction); once another process listens, it does.
    @Test func aLoneProcessNotifiesNobodyUntilAnotherListens() async throws {
        try await TestServer.run { server in
            let broadcast = server.dependencies.records.changes
            try await eventually("the first count of listeners", on: broadcast.countChanges) { broadcast.peerCount >= 0 }
            try await server.modify([Op.create("alone")])
            await broadcast.flush()
            #expect(broadcast.notificationsSent == 0)
            let other = try await Stores(client: server.dependencies.records.client).records(logger: TestDatabase.logger).changes
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await other.run() }
                defer { group.cancelAll() }
                try await eventually("another listener to be counted", on: broadcast.countChanges) { broadcast.peerCount >= 1 }
                try await server.modify([Op.create("together")])
                try await eventually("a notification", on: broadcast.countChanges) { broadcast.notificationsSent >= 1 }
            }
        }
    }

    @Test func notificationPayloadsStayUnderPostgresLimitAndIgnoreTheirOwnProcess() async throws {
        try await TestServer.run { server in
            let broadcast = server.dependencies.records.changes
            let payloads = ChangeBroadcast.payloads(origin: broadcast.origin, databases: Set((1...3000).map { Int64($0) * 1_000_003 }))
            #expect(payloads.count > 1)
            #expect(payloads.allSatisfy { $0.utf8.count < 8000 })
            #expect(broadcast.databases(in: payloads[0]) == nil)
            let foreign = payloads.map { "other" + $0.drop(while: { $0 != " " }) }
            #expect(Set(foreign.flatMap { broadcast.databases(in: $0) ?? [] }).count == 3000)
        }
    }
}
