import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SportsDomain
import Testing

/// Every endpoint, called by Bob with Alice's record names, zones, tokens, markers and asset receipts, answers
/// exactly as it does for names that exist nowhere: denied, and nothing tells Bob what Alice has.
@Suite(.bounded) struct IsolationTests {
    @Test func anotherAccountsDataIsIndistinguishableFromNothing() async throws {
        try await TestServer.run { server in
            let alice = server.alice
            let bob = server.bob
            // Alice's identifiers and, for each, a stand-in of the same shape that nobody has.
            // Alice's data: a custom zone with a record, a default-zone record with an asset, tokens and a marker.
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "AliceZone"]]]]], as: alice)
            try await server.modify([Op.create("alice-zoned", ["note": "secret"])], zone: "AliceZone", as: alice)
            let data = TestData.bytes(1000)
            let uploadURL = try await server.uploadURL(as: alice)
            let uploaded = try await server.send(uploadURL, data)
            let receipt = try #require(try JSONValue.parse(uploaded.body.readableBytesView)["singleFile"])
            let saved = try await server.modify(
                [
                    [
                        "operationType": "create",
                        "record": [
                            "recordName": "alice-photo", "recordType": "VisitPhoto",
                            "fields": ["photo": ["value": receipt], "caption": ["value": "secret"]],
                        ],
                    ]
                ], as: alice)
            let tag = try #require(saved.records.first?["recordChangeTag"]?.stringValue)
            for i in 0..<3 { try await server.modify([Op.create("alice-\(i)", ["note": "secret"])], as: alice) }
            let zoneToken = try await server.pull(zone: "AliceZone", as: alice).token
            let databaseToken = try #require(try await server.call("changes/database", [:], as: alice).json["syncToken"]?.stringValue)
            let firstPage = try await server.call("records/query", ["query": ["recordType": "Visit"], "resultsLimit": 1], as: alice)
            let marker = try #require(firstPage.json["continuationMarker"]?.stringValue)
            try await server.call(
                "subscriptions/modify",
                ["operations": [["operationType": "create", "subscription": ["subscriptionID": "alice-sub", "subscriptionType": "database"]]]],
                as: alice)
            let pushToken = try #require(try await server.call("tokens/create", [:], as: alice).json["apnsToken"]?.stringValue)
            // Bob has a zone and record of his own, so his database is not empty.
            try await server.modify([Op.create("bob-1", ["note": "bob"])], as: bob)
            let aliceBefore = try await server.call("records/query", ["query": ["recordType": "Visit"]], as: alice).json

            let nobodyOwner = "_" + String(repeating: "0", count: 32)
            let forgedToken = String(zoneToken.reversed())
            let forgedMarker = String(marker.reversed())
            var forgedReceipt = receipt.objectValue ?? [:]
            forgedReceipt["receipt"] = .string(String((receipt["receipt"]?.stringValue ?? "").reversed()))
            let secrets: [(String, String)] = [
                ("alice-photo", "nobody-photo"), ("alice-zoned", "nobody-zoned"), ("AliceZone", "NobodyZone"),
                (alice.account.userRecordName, nobodyOwner), (zoneToken, forgedToken), (databaseToken, String(databaseToken.reversed())),
                (marker, forgedMarker), (tag, "nobodytag"), ("alice-sub", "nobody-sub"), (pushToken, String(pushToken.reversed())),
            ]

            // Each probe is a request template; `{x}` marks where Alice's identifier or the stand-in goes.
            let probes: [(path: String, body: JSONValue?)] = [
                ("records/lookup", ["records": [["recordName": "alice-photo"]]]),
                ("records/lookup", ["zoneID": ["zoneName": "AliceZone"], "records": [["recordName": "alice-zoned"]]]),
                (
                    "records/lookup",
                    [
                        "zoneID": ["zoneName": "_defaultZone", "ownerRecordName": .string(alice.account.userRecordName)],
                        "records": [["recordName": "alice-photo"]],
                    ]
                ),
                ("records/query", ["zoneID": ["zoneName": "AliceZone"], "query": ["recordType": "Visit"]]),
                ("records/query", ["query": ["recordType": "Visit"], "continuationMarker": .string(marker)]),
                (
                    "records/modify",
                    [
                        "operations": [
                            [
                                "operationType": "update",
                                "record": [
                                    "recordName": "alice-photo", "recordChangeTag": .string(tag), "fields": ["caption": ["value": "bob was here"]],
                                ],
                            ]
                        ]
                    ]
                ),
                (
                    "records/modify",
                    ["operations": [["operationType": "delete", "record": ["recordName": "alice-photo", "recordChangeTag": .string(tag)]]]]
                ),
                (
                    "records/modify",
                    ["zoneID": ["zoneName": "AliceZone"], "operations": [["operationType": "forceDelete", "record": ["recordName": "alice-zoned"]]]]
                ),
                (
                    "records/modify",
                    [
                        "zoneID": ["zoneName": "AliceZone", "ownerRecordName": .string(alice.account.userRecordName)],
                        "operations": [Op.create("bob-into-alice")],
                    ]
                ),
                (
                    "records/modify",
                    [
                        "operations": [
                            [
                                "operationType": "create",
                                "record": ["recordName": "bob-photo", "recordType": "VisitPhoto", "fields": ["photo": ["value": receipt]]],
                            ]
                        ]
                    ]
                ),
                ("records/changes", ["zoneID": ["zoneName": "AliceZone"]]),
                ("records/changes", ["zoneID": ["zoneName": "AliceZone"], "syncToken": .string(zoneToken)]),
                ("changes/zone", ["zones": [["zoneID": ["zoneName": "AliceZone"]]]]),
                ("changes/zone", ["zones": [["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(zoneToken)]]]),
                ("changes/database", ["syncToken": .string(databaseToken)]),
                ("zones/changes", ["syncToken": .string(databaseToken)]),
                ("zones/lookup", ["zones": [["zoneName": "AliceZone"]]]),
                ("zones/lookup", ["zones": [["zoneName": "AliceZone", "ownerRecordName": .string(alice.account.userRecordName)]]]),
                ("zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "AliceZone"]]]]]),
                ("assets/rereference", ["assets": [["recordName": "alice-photo", "fieldName": "photo"]]]),
                ("zones/list", nil),
                ("users/caller", nil),
                ("changes/wait", ["zones": [["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(zoneToken)]], "timeout": 0]),
                ("changes/wait", ["syncToken": .string(databaseToken), "timeout": 0]),
                (
                    "changes/wait",
                    ["zones": [["zoneID": ["zoneName": "AliceZone", "ownerRecordName": .string(alice.account.userRecordName)]]], "timeout": 0]
                ),
                ("subscriptions/lookup", ["subscriptions": [["subscriptionID": "alice-sub"]]]),
                ("subscriptions/modify", ["operations": [["operationType": "delete", "subscription": ["subscriptionID": "alice-sub"]]]]),
                (
                    "subscriptions/modify",
                    [
                        "operations": [
                            [
                                "operationType": "create",
                                "subscription": [
                                    "subscriptionID": "spy", "subscriptionType": "zone",
                                    "zoneID": ["zoneName": "AliceZone", "ownerRecordName": .string(alice.account.userRecordName)],
                                ],
                            ]
                        ]
                    ]
                ),
                ("tokens/register", ["apnsEnvironment": "development", "apnsToken": .string(pushToken)]),
            ]
            for probe in probes {
                let withAlice = try await server.call(probe.path, probe.body, as: bob)
                let standIn = probe.body.map { Self.replacing($0, secrets) }
                let withNobody = try await server.call(probe.path, standIn, as: bob)
                // The receipt probe has no stand-in pair of its own: compare with a forged receipt.
                let expected =
                    probe.path == "records/modify" && JSONWriter.encode(probe.body!).contains("bob-photo")
                    ? try await server.call(probe.path, Self.replacingReceipt(probe.body!, with: .object(forgedReceipt)), as: bob)
                    : withNobody
                #expect(withAlice.status == expected.status, "\(probe.path): \(withAlice.status) vs \(expected.status)")
                #expect(
                    Self.normalized(withAlice.json, secrets) == Self.normalized(expected.json, secrets),
                    "\(probe.path) \(JSONWriter.encode(probe.body ?? .null)): \(withAlice.json) vs \(expected.json)")
                let text = JSONWriter.encode(withAlice.json)
                #expect(!text.contains("secret") && !text.contains(alice.account.userRecordName), "\(probe.path) leaked Alice's data: \(text)")
            }
            // Nothing Bob did touched Alice's records, and his writes went to his own database.
            #expect(try await server.call("records/query", ["query": ["recordType": "Visit"]], as: alice).json == aliceBefore)
            let zoned = try await server.call(
                "records/lookup", ["zoneID": ["zoneName": "AliceZone"], "records": [["recordName": "alice-zoned"]]], as: alice)
            #expect(zoned.records.first?["fields"]?["note"]?["value"] == "secret")
            #expect(try await server.call("subscriptions/list", as: alice).json["subscriptions"]?.arrayValue?.count == 1)
            let photo = try await server.call("records/lookup", ["records": [["recordName": "alice-photo"]]], as: alice)
            #expect(photo.records.first?["recordChangeTag"]?.stringValue == tag)

            // Alice's download URL re-pointed at another owner's files: the capability names its owner.
            let download = try #require(photo.records.first?["fields"]?["photo"]?["value"]?["downloadURL"]?.stringValue)
            let parts = TestData.path(download).split(separator: "/")
            let forgedOwner = "/" + parts.enumerated().map { $0.offset == 2 ? "db999999" : String($0.element) }.joined(separator: "/")
            let denied = try await server.client.execute(uri: forgedOwner.replacingOccurrences(of: "${f}", with: "x.jpg"), method: .get) {
                $0.status.code
            }
            #expect(denied == 403, "\(forgedOwner)")
        }
    }

    static func replacing(_ value: JSONValue, _ secrets: [(String, String)]) -> JSONValue {
        switch value {
        case .string(let text): .string(secrets.first { $0.0 == text }?.1 ?? text)
        case .array(let items): .array(items.map { replacing($0, secrets) })
        case .object(let object): .object(object.mapValues { replacing($0, secrets) })
        default: value
        }
    }

    static func replacingReceipt(_ value: JSONValue, with receipt: JSONValue) -> JSONValue {
        switch value {
        case .array(let items): .array(items.map { replacingReceipt($0, with: receipt) })
        case .object(let object): object["receipt"] != nil ? receipt : .object(object.mapValues { replacingReceipt($0, with: receipt) })
        default: value
        }
    }

    /// The answer with request ids dropped and every identifier (Alice's or the stand-in) written as `<x>`.
    static func normalized(_ value: JSONValue, _ secrets: [(String, String)]) -> JSONValue {
        switch value {
        case .string(var text):
            for (a, b) in secrets { text = text.replacingOccurrences(of: a, with: "<x>").replacingOccurrences(of: b, with: "<x>") }
            return .string(text)
        case .array(let items): return .array(items.map { normalized($0, secrets) })
        case .object(let object):
            return .object(object.filter { $0.key != "uuid" && $0.key != "syncToken" }.mapValues { normalized($0, secrets) })
        default: return value
        }
    }

    /// In the public database, what Alice created (a trip poll, her vote) is hers: every way Bob could change or
    /// delete it, with or without its change tag, is refused and changes nothing.
    @Test func anotherPersonsPublicRecordsCannotBeChangedOrDeleted() async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            let zone = UnlistedZone.prefix + "AlicesTripPoll2027"
            _ = try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(zone)]]]]], database: "public",
                as: server.alice)
            let vote = TripPolls.voteName(of: server.alice.account.userRecordName)
            let poll = try await server.modify(
                [
                    Op.typed(
                        "create", TripPolls.pollRecordName, type: TripPolls.pollType,
                        fields: ["title": ["value": "t"], "options": ["value": ["a", "b"]]])
                ],
                zone: zone, database: "public", as: server.alice)
            let voted = try await server.modify(
                [Op.typed("create", vote, type: TripPolls.voteType, fields: ["option": ["value": 0]])], zone: zone, database: "public",
                as: server.alice)
            #expect(poll.anyError == nil && voted.anyError == nil, "\(poll.json) \(voted.json)")
            let created = (poll.records + voted.records)
            let before = try await server.call(
                "records/lookup", ["zoneID": ["zoneName": .string(zone)], "records": [["recordName": "poll"], ["recordName": .string(vote)]]],
                database: "public")
            for record in created {
                let name = try #require(record["recordName"]?.stringValue)
                let type = try #require(record["recordType"]?.stringValue)
                let tag = record["recordChangeTag"]?.stringValue
                let fields: JSONValue = type == TripPolls.pollType ? ["title": ["value": "Bob's now"]] : ["option": ["value": 1]]
                for operation in ["update", "forceUpdate", "replace", "forceReplace", "delete", "forceDelete"] {
                    let attempt = Op.typed(
                        operation, name, tag: operation.hasPrefix("force") ? nil : tag, type: operation.hasSuffix("elete") ? nil : type,
                        fields: operation.hasSuffix("elete") ? nil : fields.objectValue)
                    let answer = try await server.modify([attempt], zone: zone, database: "public", as: server.bob)
                    #expect(answer.anyErrorCode == "ACCESS_DENIED", "\(operation) \(name): \(answer.json)")
                }
            }
            let after = try await server.call(
                "records/lookup", ["zoneID": ["zoneName": .string(zone)], "records": [["recordName": "poll"], ["recordName": .string(vote)]]],
                database: "public")
            #expect(after.json == before.json)
        }
    }
}
