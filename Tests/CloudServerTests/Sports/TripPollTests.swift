import CloudCore
import CloudHTTP
import CloudPostgres
import CloudSync
import Foundation
import SportsDomain
import StadiumCloudClient
import Testing

/// Trip polls: Carol creates a poll in an unlisted zone (its name is the share code), Alice and Bob vote, everyone
/// who has the code sees the same tally through an ordinary query and delta, strangers cannot list it, and nobody
/// changes another's poll or vote.
@Suite(.bounded) struct TripPollTests {
    static let code = UnlistedZone.prefix + "Q2FyMHNUcmlwMjAyNw"

    static func vote(_ voter: TestAccount, _ option: Int, _ operation: String = "create") -> JSONValue {
        Op.typed(
            operation, TripPolls.voteName(of: voter.account.userRecordName), type: TripPolls.voteType,
            fields: ["option": ["value": .int(Int64(option))]])
    }

    /// Each option's votes, as a device computes them from a query of the poll's zone.
    static func tally(_ server: TestServer, as person: TestAccount?) async throws -> [Int64: Int] {
        let query = try await server.call(
            "records/query", ["zoneID": ["zoneName": .string(Self.code)], "query": ["recordType": .string(TripPolls.voteType)]],
            database: "public", as: person)
        #expect(query.status == 200, "\(query.json)")
        return Dictionary(grouping: query.records.compactMap { $0["fields"]?["option"]?["value"]?.int64Value }, by: { $0 }).mapValues(\.count)
    }

    @Test func twoPeopleVoteInAThirdsPollAndAllThreeSeeTheSameTally() async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            let made = try await server.dependencies.credentials.createAccount(name: "carol", idleMs: 3_600_000, logger: TestDatabase.logger)
            let carol = TestAccount(account: made.account, webAuthToken: made.webAuthToken)
            let zone: JSONValue = ["zoneID": ["zoneName": .string(Self.code)]]

            let created = try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": zone]]], database: "public", as: carol)
            #expect(created.json["zones"]?[0]?["serverErrorCode"] == nil, "\(created.json)")
            let poll = Op.typed(
                "create", TripPolls.pollRecordName, type: TripPolls.pollType,
                fields: [
                    "title": ["value": "Ballparks in June"], "options": ["value": ["West coast", "Midwest", "Northeast"]],
                    "closesAt": ["value": 1_800_000_000_000],
                ])
            #expect(try await server.modify([poll], zone: Self.code, database: "public", as: carol).anyError == nil)

            let token = try #require(
                try await server.call("changes/zone", ["zones": [["zoneID": zone["zoneID"]!]]], database: "public", as: server.alice)
                    .json["zones"]?[0]?["syncToken"]?.stringValue)
            #expect(try await server.modify([Self.vote(server.alice, 0)], zone: Self.code, database: "public", as: server.alice).anyError == nil)
            #expect(try await server.modify([Self.vote(server.bob, 2)], zone: Self.code, database: "public", as: server.bob).anyError == nil)
            // Bob changes his mind: his vote record changes, he does not get a second one.
            #expect(
                try await server.modify([Self.vote(server.bob, 0, "forceUpdate")], zone: Self.code, database: "public", as: server.bob).anyError
                    == nil)
            #expect(try await server.modify([Self.vote(server.bob, 1)], zone: Self.code, database: "public", as: server.bob).anyErrorCode == "EXISTS")

            for person in [carol, server.alice, server.bob] { #expect(try await Self.tally(server, as: person) == [0: 2]) }
            // Alice's device sees the votes as an ordinary delta of the poll's zone.
            let delta = try await server.call(
                "changes/zone", ["zones": [["zoneID": zone["zoneID"]!, "syncToken": .string(token)]]], database: "public", as: server.alice)
            #expect(
                Set(delta.json["zones"]?[0]?["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []) == [
                    TripPolls.voteName(of: server.alice.account.userRecordName), TripPolls.voteName(of: server.bob.account.userRecordName),
                ])

            // Every cross-person write is refused.
            let refusals: [(TestAccount, JSONValue, String)] = [
                (server.alice, Self.vote(server.bob, 1, "forceUpdate"), "ACCESS_DENIED"),  // Bob's vote
                (server.alice, Op.typed("forceDelete", TripPolls.voteName(of: server.bob.account.userRecordName)), "ACCESS_DENIED"),
                (
                    server.bob, Op.typed("forceUpdate", TripPolls.pollRecordName, type: TripPolls.pollType, fields: ["title": ["value": "Mine"]]),
                    "ACCESS_DENIED"
                ),
                (server.bob, Op.typed("forceDelete", TripPolls.pollRecordName), "ACCESS_DENIED"),
                (
                    server.alice,
                    Op.typed(
                        "create", TripPolls.voteName(of: carol.account.userRecordName), type: TripPolls.voteType, fields: ["option": ["value": 1]]),
                    "BAD_REQUEST"
                ),  // a vote in Carol's name
            ]
            for (person, operation, code) in refusals {
                #expect(try await server.modify([operation], zone: Self.code, database: "public", as: person).anyErrorCode == code, "\(operation)")
            }
            #expect(try await Self.tally(server, as: nil) == [0: 2])

            // A vote needs an option the poll has, before it closes.
            #expect(try await server.modify([Self.vote(carol, 3)], zone: Self.code, database: "public", as: carol).anyErrorCode == "BAD_REQUEST")
            let closing = Op.typed("forceUpdate", TripPolls.pollRecordName, type: TripPolls.pollType, fields: ["closesAt": ["value": 1_000]])
            #expect(try await server.modify([closing], zone: Self.code, database: "public", as: carol).anyError == nil)
            let late = try await server.modify([Self.vote(carol, 1)], zone: Self.code, database: "public", as: carol)
            #expect(late.anyError?["reason"]?.stringValue?.contains("closed") == true)
        }
    }

    @Test func strangersCannotListPollsAndPollsLiveOnlyInUnlistedZones() async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            let zone: JSONValue = ["zoneID": ["zoneName": .string(Self.code)]]
            // Bob listens to every new poll and everything in the public database, before Alice makes hers.
            let everyPoll: JSONValue = ["subscriptionID": "polls", "subscriptionType": "query", "query": ["recordType": "TripPoll"]]
            for subscription in [everyPoll, SubscriptionTests.wholeDatabase] {
                let made = try await server.call("subscriptions/modify", SubscriptionTests.create(subscription), database: "public", as: server.bob)
                #expect(made.json["subscriptions"]?[0]?["serverErrorCode"] == nil, "\(made.json)")
            }
            let (courier, _) = try await SubscriptionTests.courierURL(server, device: "bobs-phone", as: server.bob)
            _ = try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": zone]]], database: "public", as: server.alice)
            let poll = Op.typed(
                "create", TripPolls.pollRecordName, type: TripPolls.pollType, fields: ["title": ["value": "t"], "options": ["value": ["a", "b"]]])
            #expect(try await server.modify([poll], zone: Self.code, database: "public", as: server.alice).anyError == nil)
            // No notification names it either; a subscription to the zone itself, by whoever has the code, hears of it.
            #expect(try await SubscriptionTests.drain(server, courier).isEmpty)
            let pollZone: JSONValue = ["subscriptionID": "this-poll", "subscriptionType": "zone", "zoneID": zone["zoneID"]!]
            try await server.call("subscriptions/modify", SubscriptionTests.create(pollZone), database: "public", as: server.bob)
            let vote = Op.typed(
                "create", TripPolls.voteName(of: server.alice.account.userRecordName), type: TripPolls.voteType, fields: ["option": ["value": 1]])
            #expect(try await server.modify([vote], zone: Self.code, database: "public", as: server.alice).anyError == nil)
            let frames = try await SubscriptionTests.drain(server, courier)
            #expect(frames.count == 1 && JSONWriter.encode(frames[0]).contains(Self.code), "\(frames)")

            // No listing reveals the poll: zones, the database's changes, a query across zones.
            let zones = try await server.call("zones/list", database: "public", as: server.bob)
            #expect(zones.json["zones"]?.arrayValue?.contains { $0["zoneID"]?["zoneName"]?.stringValue == Self.code } == false)
            let changes = try await server.call("changes/database", [:], database: "public", as: server.bob)
            #expect(changes.json["zones"]?.arrayValue?.contains { $0["zoneID"]?["zoneName"]?.stringValue == Self.code } == false)
            let query = try await server.call("records/query", ["query": ["recordType": "TripPoll"]], database: "public", as: server.bob)
            #expect(query.status == 200 && query.records.isEmpty)
            // Who has the code reads it.
            let lookup = try await server.call(
                "records/lookup", ["zoneID": zone["zoneID"]!, "records": [["recordName": "poll"]]], database: "public", as: server.bob)
            #expect(lookup.records.first?["fields"]?["title"]?["value"] == "t")

            // Polls and votes only in unlisted zones, zones made by people only unlisted with a long secret, never deleted.
            #expect(try await server.modify([poll], database: "public", as: server.alice).anyErrorCode == "BAD_REQUEST")
            for (name, code) in [("Trips", "ACCESS_DENIED"), (UnlistedZone.prefix + "short", "BAD_REQUEST")] {
                let made = try await server.call(
                    "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(name)]]]]],
                    database: "public", as: server.bob)
                #expect(made.json["zones"]?[0]?["serverErrorCode"]?.stringValue == code)
            }
            let deleted = try await server.call(
                "zones/modify", ["operations": [["operationType": "delete", "zone": zone]]], database: "public", as: server.alice)
            #expect(deleted.json["zones"]?[0]?["serverErrorCode"] == "ACCESS_DENIED")
            let anonymous = try await server.call("zones/modify", ["operations": [["operationType": "create", "zone": zone]]], database: "public")
            #expect(anonymous.status == 403)
        }
    }

    /// The same through the SDK, as three people's phones do it.
    @Test func threePeoplesDevicesCreateVoteAndSeeTheTally() async throws {
        try await ClientSyncTests.run { server, folder in
            let credentials = server.dependencies.credentials
            _ = try await credentials.createAccount(name: "carol", idleMs: 3_600_000, logger: TestDatabase.logger)
            for name in ["bob", "carol"] {
                _ = try await credentials.setPassword(accountName: name, password: ClientSyncTests.password, logger: TestDatabase.logger)
            }
            let carol = try await ClientSyncTests.device(server, folder, "carol", account: "carol")
            let alice = try await ClientSyncTests.device(server, folder, "alice")
            let bob = try await ClientSyncTests.device(server, folder, "bob", account: "bob")
            let code = try await carol.createPoll(
                title: "Ballparks in June", options: ["West coast", "Midwest"], summaries: ["SF, LA, SD", "CHI, MIL"], closesAt: 1_800_000_000_000)
            #expect(code.hasPrefix(UnlistedZone.prefix) && code.count >= UnlistedZone.prefix.count + UnlistedZone.minimumSecretLength)
            try await alice.vote(inPoll: code, option: 1)
            try await bob.vote(inPoll: code, option: 0)
            try await bob.vote(inPoll: code, option: 1)  // changed his mind
            for device in [carol, alice, bob] {
                let poll = try await device.poll(code)
                #expect(poll.title == "Ballparks in June" && poll.options == ["West coast", "Midwest"] && poll.votes == [0, 2])
            }
            #expect(try await bob.poll(code).myVote == 1)
            #expect(try await carol.poll(code).myVote == nil)
            await #expect { try await alice.vote(inPoll: code, option: 25) } throws: { error in
                (error as? SyncError)?.code == "BAD_REQUEST" && (error as? SyncError)?.reason.contains("options") == true
            }
            await #expect(throws: SyncError.self) { try await alice.poll(UnlistedZone.prefix + "NoSuchPollAtAllHere") }
        }
    }
}

extension TripPollTests {
    /// Votes arriving at once are written together (their database is one: the public one), each checked against the
    /// poll on its own: 24 people vote at once, then all change their vote at once while one of them sends an option
    /// the poll does not have. Every valid vote counts once, the bad one alone is refused, and a device's delta of the
    /// poll's zone holds every vote.
    @Test func manyPeopleVotingAtOnceAreEachCountedOnce() async throws {
        try await TestServer.run { server in
            let logger = TestDatabase.logger
            try await server.dependencies.records.applySchema(try CanonicalFixtures.schema.get(), to: TestServer.development, logger: logger)
            let zone: JSONValue = ["zoneID": ["zoneName": .string(Self.code)]]
            #expect(
                try await server.call("zones/modify", ["operations": [["operationType": "create", "zone": zone]]], database: "public", as: server.alice)
                    .json["zones"]?[0]?["serverErrorCode"] == nil)
            let poll = Op.typed(
                "create", TripPolls.pollRecordName, type: TripPolls.pollType, fields: ["title": ["value": "Next trip"], "options": ["value": ["A", "B", "C"]]])
            #expect(try await server.modify([poll], zone: Self.code, database: "public", as: server.alice).anyError == nil)
            let token = try #require(
                try await server.call("changes/zone", ["zones": [["zoneID": zone["zoneID"]!]]], database: "public", as: server.alice)
                    .json["zones"]?[0]?["syncToken"]?.stringValue)
            var voters: [TestAccount] = []
            for index in 0..<24 {
                let made = try await server.dependencies.credentials.createAccount(name: "voter\(index)", idleMs: 3_600_000, logger: logger)
                voters.append(TestAccount(account: made.account, webAuthToken: made.webAuthToken))
            }
            /// Every voter at once; the error code each got (nil: saved).
            func voteAll(_ option: @escaping @Sendable (Int) -> Int, _ operation: String) async throws -> [String?] {
                try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                    for (index, voter) in voters.enumerated() {
                        group.addTask {
                            let reply = try await server.modify(
                                [Self.vote(voter, option(index), operation)], zone: Self.code, database: "public", as: voter)
                            return (index, reply.anyErrorCode)
                        }
                    }
                    var codes = [String?](repeating: "none", count: voters.count)
                    for try await (index, code) in group { codes[index] = code }
                    return codes
                }
            }
            #expect(try await voteAll({ $0 % 3 }, "create") == Array(repeating: nil, count: 24))
            let changed = try await voteAll({ $0 == 5 ? 7 : ($0 + 1) % 3 }, "forceUpdate")
            #expect(changed[5] == "BAD_REQUEST")
            #expect(changed.enumerated().allSatisfy { $0.offset == 5 || $0.element == nil })
            // Voter 5 kept their first vote (option 2); the others moved one option on.
            var expected: [Int64: Int] = [:]
            for index in 0..<24 { expected[Int64(index == 5 ? 2 : (index + 1) % 3), default: 0] += 1 }
            #expect(try await Self.tally(server, as: server.bob) == expected)
            let delta = try await server.call(
                "changes/zone", ["zones": [["zoneID": zone["zoneID"]!, "syncToken": .string(token)]]], database: "public", as: server.bob)
            #expect(delta.json["zones"]?[0]?["records"]?.arrayValue?.count == 24)
        }
    }
}
