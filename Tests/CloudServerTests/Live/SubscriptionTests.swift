import CloudCore
import CloudHTTP
import CloudPostgres
import CloudRuntime
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// CloudKit subscriptions, push tokens and the web courier, as a MistKit-style client uses them.
@Suite(.bounded) struct SubscriptionTests {
    static func create(_ subscription: JSONValue) -> JSONValue { ["operations": [["operationType": "create", "subscription": subscription]]] }

    static let visitsCreated: JSONValue = [
        "subscriptionID": "new-visits", "subscriptionType": "query", "query": ["recordType": "Visit"], "firesOn": ["create"],
        "notificationInfo": ["shouldSendContentAvailable": true],
    ]
    static let defaultZone: JSONValue = ["subscriptionID": "zone", "subscriptionType": "zone", "zoneID": ["zoneName": "_defaultZone"]]
    static let wholeDatabase: JSONValue = ["subscriptionID": "db", "subscriptionType": "database"]

    /// A record write as a given device.
    @discardableResult
    static func save(_ server: TestServer, _ name: String, device: String, as account: TestAccount? = nil) async throws -> Int {
        let body = JSONWriter.encode(["operations": [Op.create(name)]])
        let who = account ?? server.alice
        return try await server.client.execute(
            uri: "\(TestServer.base)/private/records/modify?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(who.webAuthToken)", method: .post,
            headers: [.contentType: "application/json", HTTPField.Name("X-StadiumCloud-Device-ID")!: device], body: ByteBuffer(string: body)
        ) { Int($0.status.code) }
    }

    /// `tokens/create` at CloudKit JS's `/device/…` path, as a device; answers the courier URL's path and query.
    static func courierURL(_ server: TestServer, device: String = "phone", as account: TestAccount? = nil) async throws -> (
        path: String, token: String
    ) {
        let who = account ?? server.alice
        let json = try await server.client.execute(
            uri: "/device/1/iCloud.com.sportstime.test/development/tokens/create?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(who.webAuthToken)",
            method: .post, headers: [.contentType: "application/json", HTTPField.Name("X-StadiumCloud-Device-ID")!: device],
            body: ByteBuffer(string: #"{"apnsEnvironment":"development"}"#)
        ) { response in
            #expect(response.status == .ok)
            return try JSONValue.parse(response.body.readableBytesView)
        }
        #expect(json["apnsEnvironment"] == "development")
        let url = try #require(json["webcourierURL"]?.stringValue)
        let token = try #require(json["apnsToken"]?.stringValue)
        #expect(url.contains("/webcourier/aps?tok=\(token)&ttl="))
        return (String(url[url.range(of: "/webcourier")!.lowerBound...]), token)
    }

    /// One courier poll: the frame, or nil for the empty answer of a timeout (and for an error, with its status).
    static func poll(_ server: TestServer, _ path: String, timeout: Int = 0) async throws -> (status: Int, frame: JSONValue?) {
        try await server.client.execute(uri: "\(path)&timeout=\(timeout)", method: .get) { response in
            let frame = response.status == .ok && response.body.readableBytes > 0 ? try JSONValue.parse(response.body.readableBytesView) : nil
            return (Int(response.status.code), frame)
        }
    }

    /// Every frame queued for the token now (at most 100, so a server that never runs dry fails the test instead
    /// of looping).
    static func drain(_ server: TestServer, _ path: String) async throws -> [JSONValue] {
        var frames: [JSONValue] = []
        while frames.count < 100, let frame = try await Self.poll(server, path).frame { frames.append(frame) }
        return frames
    }

    @Test func subscriptionsAreCreatedListedLookedUpUpdatedAndDeleted() async throws {
        try await TestServer.run { server in
            let created = try await server.call("subscriptions/modify", Self.create(Self.visitsCreated), as: server.alice)
            #expect(created.status == 200)
            let answered = try #require(created.json["subscriptions"]?[0])
            #expect(answered["subscriptionID"] == "new-visits")
            #expect(answered["firesOn"] == ["create"])
            #expect(answered["zoneWide"] == true)
            #expect(answered["notificationInfo"]?["shouldSendContentAvailable"] == true)
            try await server.call("subscriptions/modify", Self.create(Self.defaultZone), as: server.alice)
            try await server.call("subscriptions/modify", Self.create(Self.wholeDatabase), as: server.alice)
            // In the public database too: a person's subscription to canonical data.
            let onPublic = try await server.call("subscriptions/modify", Self.create(Self.defaultZone), database: "public", as: server.alice)
            #expect(onPublic.json["subscriptions"]?[0]?["subscriptionID"] == "zone")

            let listed = try await server.call("subscriptions/list", as: server.alice)
            #expect(listed.json["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue } == ["db", "new-visits", "zone"])
            let looked = try await server.call(
                "subscriptions/lookup", ["subscriptions": [["subscriptionID": "zone"], ["subscriptionID": "nope"]]], as: server.alice)
            #expect(looked.json["subscriptions"]?[0]?["subscriptionType"] == "zone")
            WireShape.expectItemError(looked.json["subscriptions"]?[1], "NOT_FOUND", key: "subscriptionID")

            let updated = try await server.call(
                "subscriptions/modify",
                [
                    "operations": [
                        ["operationType": "update", "subscription": ["subscriptionID": "zone", "subscriptionType": "database"]],
                        ["operationType": "update", "subscription": ["subscriptionID": "missing", "subscriptionType": "database"]],
                        ["operationType": "delete", "subscription": ["subscriptionID": "db"]],
                        ["operationType": "delete", "subscription": ["subscriptionID": "db"]],
                    ]
                ], as: server.alice)
            let answers = try #require(updated.json["subscriptions"]?.arrayValue)
            #expect(answers[0]["subscriptionType"] == "database")
            WireShape.expectItemError(answers[1], "NOT_FOUND", key: "subscriptionID")
            #expect(answers[2]["deleted"] == true)
            WireShape.expectItemError(answers[3], "NOT_FOUND", key: "subscriptionID")
            let after = try await server.call("subscriptions/list", as: server.alice)
            #expect(after.json["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue } == ["new-visits", "zone"])
        }
    }

    @Test func badSubscriptionsFailAloneWithReasonsAndLimitsHold() async throws {
        try await TestServer.runImported(try CanonicalFixtures.dataset.get()) { server in
            let bad: [(JSONValue, String)] = [
                (["subscriptionID": "a", "subscriptionType": "push"], "subscriptionType must be one of"),
                (["subscriptionID": "a", "subscriptionType": "zone"], "zoneID is required"),
                (["subscriptionID": "a", "subscriptionType": "query"], "query is required"),
                (["subscriptionType": "database"], "subscriptionID is required"),
                (["subscriptionID": "a", "subscriptionType": "database", "colour": "red"], "colour is not a subscription field"),
                (["subscriptionID": "a", "subscriptionType": "database", "zoneID": ["zoneName": "x"]], "a database subscription has no zoneID"),
                (
                    ["subscriptionID": "a", "subscriptionType": "query", "query": ["recordType": "StadiumVisit"], "firesOn": ["explode"]],
                    "may hold create, update and delete"
                ),
                (["subscriptionID": "a", "subscriptionType": "query", "query": ["recordType": "Unicorn"]], "Unicorn is not in the schema"),
                (
                    [
                        "subscriptionID": "a", "subscriptionType": "query",
                        "query": [
                            "recordType": "StadiumPreference",
                            "filterBy": [["comparator": "EQUALS", "fieldName": "userNickname", "fieldValue": ["value": "x"]]],
                        ],
                    ], "field userNickname of StadiumPreference is not marked queryable"
                ),
            ]
            for (subscription, reason) in bad {
                let reply = try await server.call("subscriptions/modify", Self.create(subscription), as: server.alice)
                #expect(reply.status == 200)
                let item = reply.json["subscriptions"]?[0]
                #expect(item?["serverErrorCode"] == "BAD_REQUEST", "\(subscription)")
                #expect(item?["reason"]?.stringValue?.contains(reason) == true, "\(String(describing: item))")
            }
            // A queryable field is fine.
            let good = try await server.call(
                "subscriptions/modify",
                Self.create([
                    "subscriptionID": "fav", "subscriptionType": "query",
                    "query": [
                        "recordType": "StadiumPreference",
                        "filterBy": [["comparator": "EQUALS", "fieldName": "isFavorite", "fieldValue": ["value": 1]]],
                    ],
                ]), as: server.alice)
            #expect(good.json["subscriptions"]?[0]?["subscriptionID"] == "fav")
            // Subscriptions belong to a person: an API token alone cannot have any.
            let anonymous = try await server.call("subscriptions/list", database: "public")
            #expect(anonymous.status == 421)
            #expect(anonymous.errorCode == "AUTHENTICATION_REQUIRED")
        }
        try await TestServer.run(configure: { $0.live.maxSubscriptions = 1 }) { server in
            try await server.call("subscriptions/modify", Self.create(Self.wholeDatabase), as: server.alice)
            let second = try await server.call("subscriptions/modify", Self.create(Self.defaultZone), as: server.alice)
            WireShape.expectItemError(second.json["subscriptions"]?[0], "QUOTA_EXCEEDED", key: "subscriptionID")
            // Saving the same one again is an update, not one more.
            let again = try await server.call("subscriptions/modify", Self.create(Self.wholeDatabase), as: server.alice)
            #expect(again.json["subscriptions"]?[0]?["subscriptionID"] == "db")
        }
    }

    @Test func theCourierDeliversOneFramePerChangeAndSubscriptionButNotTheDevicesOwn() async throws {
        try await TestServer.run { server in
            for subscription in [Self.visitsCreated, Self.defaultZone, Self.wholeDatabase] {
                try await server.call("subscriptions/modify", Self.create(subscription), as: server.alice)
            }
            let (path, token) = try await Self.courierURL(server, device: "phone")
            #expect(try await Self.poll(server, path).frame == nil)
            // The phone's own change is not news to the phone.
            #expect(try await Self.save(server, "own", device: "phone") == 200)
            #expect(try await Self.poll(server, path).frame == nil)

            #expect(try await Self.save(server, "v1", device: "tablet") == 200)
            var frames = try await Self.drain(server, path)
            #expect(frames.count == 3)
            #expect(frames.allSatisfy { $0["aps"]?["content-available"] == 1 && $0["ck"]?["cid"] == "iCloud.com.sportstime.test" })
            #expect(frames.allSatisfy { $0["ck"]?["ckuserid"]?.stringValue == server.alice.account.userRecordName })
            let query = try #require(frames.first { $0["ck"]?["qry"] != nil }?["ck"]?["qry"])
            #expect(query["sid"] == "new-visits")
            #expect(query["rid"] == "v1")
            #expect(query["fo"] == 1)
            #expect(query["zid"] == "_defaultZone")
            #expect(query["dbs"] == 1, "CloudKit JS reads 0 as the public database, 1 as the private one")
            #expect(frames.contains { $0["ck"]?["fet"]?["sid"] == "zone" && $0["ck"]?["fet"]?["zid"] == "_defaultZone" })
            #expect(frames.contains { $0["ck"]?["met"]?["sid"] == "db" })

            // An update does not fire the create-only query subscription, but the zone and database ones.
            try await server.modify([Op.typed("forceUpdate", "v1", type: "Visit", fields: ["n": ["value": 2]])])
            frames = try await Self.drain(server, path)
            #expect(frames.count == 2)
            #expect(!frames.contains { $0["ck"]?["qry"] != nil })

            // A poll held open wakes when the change commits.
            async let held = Self.poll(server, path, timeout: 30)
            let feed = server.dependencies.records.changes.feed
            try await eventually("a held courier poll", on: feed.waitingChanges) { feed.waiting >= 1 }
            try await Self.save(server, "v2", device: "tablet")
            #expect(try await held.frame != nil)

            // Registering the token binds it to Alice; it is not Bob's to register.
            let registered = try await server.call(
                "tokens/register", ["apnsEnvironment": "development", "apnsToken": .string(token)], as: server.alice)
            #expect(registered.status == 200)
            #expect(registered.json["apnsToken"]?.stringValue == token)
            let stolen = try await server.call("tokens/register", ["apnsEnvironment": "development", "apnsToken": .string(token)], as: server.bob)
            #expect(stolen.status == 400)
            let apns = try await server.call("tokens/register", ["apnsEnvironment": "development", "apnsToken": "a1b2c3"], as: server.alice)
            #expect(apns.status == 400)
        }
    }

    @Test func firesOnceAndPrunedBacklogsAndExpiredOrUnknownTokens() async throws {
        try await TestServer.run(configure: { $0.live.pushTokenLifetimeSeconds = 3600 }) { server in
            let once: JSONValue = [
                "subscriptionID": "once", "subscriptionType": "query", "query": ["recordType": "Visit"], "firesOnce": true,
            ]
            try await server.call("subscriptions/modify", Self.create(once), as: server.alice)
            let (path, _) = try await Self.courierURL(server)
            try await server.modify((0..<60).map { Op.create("r\($0)") })
            let first = try await Self.poll(server, path)
            #expect(first.frame?["ck"]?["qry"]?["sid"] == "once")
            #expect(try await Self.poll(server, path).frame == nil)
            #expect(try await server.call("subscriptions/list", as: server.alice).json["subscriptions"] == [])

            // 60 matching changes: 50 frames, the last one marked pruned (fetch with your tokens).
            try await server.call("subscriptions/modify", Self.create(Self.visitsCreated), as: server.alice)
            try await server.modify((0..<60).map { Op.create("s\($0)") })
            let frames = try await Self.drain(server, path)
            #expect(frames.count == 50)
            #expect(frames.last?["ck"]?["p"] == true)

            let unknown = try await Self.poll(server, "/webcourier/aps?tok=nonsense")
            #expect(unknown.status == 401)
            let missing = try await server.client.execute(uri: "/webcourier/aps", method: .get) { Int($0.status.code) }
            #expect(missing == 400)
            let badTimeout = try await Self.poll(server, path, timeout: 61)
            #expect(badTimeout.status == 400)
        }
        let clock = ManualClock()
        try await TestServer.run(configure: {
            $0.clock = clock.clock
            $0.live.pushTokenLifetimeSeconds = 0
        }) { server in
            let (path, _) = try await Self.courierURL(server)
            let expired = try await server.client.execute(uri: path, method: .get) { response in
                (Int(response.status.code), try JSONValue.parse(response.body.readableBytesView))
            }
            #expect(expired.0 == 401)
            #expect(expired.1["serverErrorCode"] == "AUTHENTICATION_FAILED")
            #expect(expired.1["reason"]?.stringValue?.contains("expired") == true)
            // The purge job removes it; then it is merely unknown.
            clock.advance(by: .milliseconds(1))
            try await server.dependencies.records.purgeExpiredCourierTokens(logger: TestDatabase.logger)
            let purged = try await server.client.execute(uri: path, method: .get) { try JSONValue.parse($0.body.readableBytesView) }
            #expect(purged["reason"]?.stringValue?.contains("unknown push token") == true)
        }
    }

    @Test func anotherPersonsSubscriptionsAndNotificationsStayTheirs() async throws {
        try await TestServer.run { server in
            try await server.call("subscriptions/modify", Self.create(Self.wholeDatabase), as: server.alice)
            try await server.call("subscriptions/modify", Self.create(Self.wholeDatabase), as: server.bob)
            let (alicePath, _) = try await Self.courierURL(server)
            let (bobPath, _) = try await Self.courierURL(server, as: server.bob)
            // Bob sees and deletes only his own.
            #expect(try await server.call("subscriptions/list", as: server.bob).json["subscriptions"]?.arrayValue?.count == 1)
            let delete = try await server.call(
                "subscriptions/modify", ["operations": [["operationType": "delete", "subscription": ["subscriptionID": "db"]]]], as: server.bob)
            #expect(delete.json["subscriptions"]?[0]?["deleted"] == true)
            #expect(try await server.call("subscriptions/list", as: server.alice).json["subscriptions"]?.arrayValue?.count == 1)
            // Alice's change reaches Alice's token only, and a subscription to a zone of hers is not Bob's to make.
            try await Self.save(server, "mine", device: "tablet")
            #expect(try await Self.poll(server, bobPath).frame == nil)
            #expect(try await Self.poll(server, alicePath).frame?["ck"]?["met"]?["sid"] == "db")
            let foreignZone = try await server.call(
                "subscriptions/modify",
                Self.create([
                    "subscriptionID": "spy", "subscriptionType": "zone",
                    "zoneID": ["zoneName": "_defaultZone", "ownerRecordName": .string(server.alice.account.userRecordName)],
                ]), as: server.bob)
            WireShape.expectItemError(foreignZone.json["subscriptions"]?[0], "ZONE_NOT_FOUND", key: "subscriptionID")
            try await Self.save(server, "again", device: "tablet")
            #expect(try await Self.poll(server, bobPath).frame == nil)
        }
    }
}
