import CloudCore
@testable import CloudHTTP
import CloudPostgres
import Foundation
import Testing

@Suite(.bounded) struct ChangesTests {
    @Test func pagesDeliverEveryChangeOnceAndTombstonesAfterTheFirstSync() async throws {
        try await TestServer.run { server in
            try await server.modify((0..<25).map { Op.create("r\($0)", ["n": .int(Int64($0))]) })
            let first = try await server.pull(limit: 7)
            #expect(first.records.count == 25)
            #expect(Set(first.records.compactMap { $0["recordName"]?.stringValue }).count == 25)

            try await server.modify([Op.typed("forceDelete", "r3"), Op.typed("forceUpdate", "r4", fields: ["n": ["value": 40]])])
            let delta = try await server.pull(from: first.token, limit: 1)
            #expect(delta.records.map { $0["recordName"]?.stringValue } == ["r3", "r4"])
            #expect(delta.records[0]["deleted"] == true)
            #expect(delta.records[0]["recordType"] == "Visit")
            #expect(delta.records[1]["fields"]?["n"]?["value"] == 40)

            let empty = try await server.pull(from: delta.token)
            #expect(empty.records.isEmpty)
            // A fresh sync skips tombstones: the client never had those records.
            let fresh = try await server.pull()
            #expect(fresh.records.count == 24)
        }
    }

    /// A page copies each record's answer as it was stored when the record was written (migrations/0017); the same
    /// page asked with every key desired is written from the record's columns. Both say the same, numbers as strings
    /// or not, for strings that need escaping, every kind of value, an update and a tombstone; and so do queries.
    @Test func aStoredAnswerSaysWhatTheRecordsColumnsSay() async throws {
        try await TestServer.run { server in
            let fields: [String: JSONValue] = [
                "note": ["value": "quote \" backslash \\ newline \n tab \t control \u{1} é 🏟"], "n": ["value": 9_007_199_254_740_993],
                "d": ["value": 1.5], "t": ["value": 1_700_000_000_000, "type": "TIMESTAMP"],
                "r": ["value": ["recordName": "other", "action": "NONE"], "type": "REFERENCE"], "il": ["value": [1, 2], "type": "INT64_LIST"],
            ]
            try await server.modify([
                ["operationType": "create", "record": ["recordName": "all \"of\" them", "recordType": "Visit", "fields": .object(fields)]],
                Op.create("gone"), Op.create("changed", ["n": .int(1)]),
            ])
            let first = try await server.pull()
            try await server.modify([Op.typed("forceDelete", "gone"), Op.typed("forceUpdate", "changed", fields: ["n": ["value": 2]])])
            for token in [nil, first.token] {
                for numbersAsStrings in [false, true] {
                    func page(_ desiredKeys: [String]?) async throws -> JSONValue? {
                        var entry: [String: JSONValue] = ["zoneID": ["zoneName": "_defaultZone"]]
                        if let token { entry["syncToken"] = .string(token) }
                        if let desiredKeys { entry["desiredKeys"] = .array(desiredKeys.map { .string($0) }) }
                        let body: JSONValue = ["zones": [.object(entry)], "numbersAsStrings": .bool(numbersAsStrings)]
                        return try await server.call("changes/zone", body, as: server.alice).json["zones"]?[0]?["records"]
                    }
                    let answered = try #require(try await page(nil))
                    #expect(answered.arrayValue?.count == 2)  // the first sync skips the tombstone, the delta has it
                    #expect(answered == (try await page(Array(fields.keys))))
                }
            }
            // records/query copies stored answers too.
            for numbersAsStrings in [false, true] {
                func query(_ desiredKeys: [String]?) async throws -> JSONValue? {
                    var body: [String: JSONValue] = ["query": ["recordType": "Visit"], "numbersAsStrings": .bool(numbersAsStrings)]
                    if let desiredKeys { body["desiredKeys"] = .array(desiredKeys.map { .string($0) }) }
                    return try await server.call("records/query", .object(body), as: server.alice).json["records"]
                }
                let answered = try #require(try await query(nil))
                #expect(answered.arrayValue?.count == 2)
                #expect(answered == (try await query(Array(fields.keys))))
            }
        }
    }

    /// A live record answered as gone (a type the caller may not read: the public cache's ranges) is written from its
    /// name and type, never from its stored answer, which holds its fields.
    @Test func aRecordMarkedDeletedIsNotWrittenFromItsAnswer() throws {
        let stamp = ChangeStamp(timestamp: 1, userRecordName: "_u", deviceID: "d")
        var record = RecordSnapshot(
            recordName: "secret", recordType: "Note", changeSeq: 7, deleted: false, fieldsJSON: "", created: stamp, modified: stamp,
            storedAnswer: #""recordName":"secret","recordType":"Note","fields":{"text":{"type":"STRING","value":"hidden"}}"#)
        record.deleted = true
        var writer = WireWriter()
        writer.record(record, zoneName: "_defaultZone", owner: "_defaultOwner")
        let written = try JSONValue.parse(writer.json.bytes)
        #expect(written["deleted"] == true)
        #expect(written["recordName"] == "secret")
        #expect(written["fields"] == nil)
    }

    @Test func aPageCarriesOnlyTheDesiredRecordTypesAndKeys() async throws {
        try await TestServer.run { server in
            try await server.modify([
                Op.create("v1", ["n": .int(1), "note": "a"]), Op.create("p1", type: "Photo", ["n": .int(2)]),
                Op.create("v2", ["n": .int(3), "note": "b"]),
            ])
            let entry: [String: JSONValue] = ["zoneID": ["zoneName": "_defaultZone"], "desiredRecordTypes": ["Visit"], "desiredKeys": ["note"]]
            let page = try #require(try await server.call("changes/zone", ["zones": [.object(entry)]], as: server.alice).json["zones"]?[0])
            #expect(page["records"]?.arrayValue?.map { $0["recordName"] } == ["v1", "v2"])
            #expect(page["records"]?[0]?["fields"] == ["note": ["type": "STRING", "value": "a"]])
            var none = entry
            none["desiredKeys"] = []
            let bare = try #require(try await server.call("changes/zone", ["zones": [.object(none)]], as: server.alice).json["zones"]?[0])
            #expect(bare["records"]?[1]?["fields"] == [:])
            // The same token from a page of some types or keys as from a page of all.
            #expect(page["syncToken"]?.stringValue == (try await server.pull()).token)
        }
    }

    /// Regression: every delta answered the database's head, so the token of a zone nobody wrote to moved with every
    /// write to another (every season's token moved when one score was corrected). It stays, and skips nothing.
    @Test func aZoneNobodyWroteToKeepsItsTokenWhileOthersChange() async throws {
        try await TestServer.run { server in
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Quiet"]]]]], as: server.alice)
            try await server.modify([Op.create("q1")], zone: "Quiet")
            let quiet = try await server.pull(zone: "Quiet")
            let busy = try await server.pull()
            try await server.modify([Op.create("b1"), Op.create("b2")])
            let again = try await server.pull(zone: "Quiet", from: quiet.token)
            #expect(again.records.isEmpty && again.token == quiet.token)
            // A first fetch of it ends at its own last change too, and a later write to it is found from there.
            #expect(try await server.pull(zone: "Quiet").token == quiet.token)
            try await server.modify([Op.create("q2")], zone: "Quiet")
            #expect(try await server.pull(zone: "Quiet", from: quiet.token).records.map { $0["recordName"] } == ["q2"])
            #expect(try await server.pull(from: busy.token).records.map { $0["recordName"] } == ["b1", "b2"])
        }
    }

    /// Regression: the pages after a first one carried tombstones of records deleted before the fetch began (CloudKit
    /// JS paging a large first sync got them all). A deletion made during the fetch still arrives.
    @Test func aFirstFetchSkipsTombstonesOnEveryPageButKeepsDeletionsMadeDuringIt() async throws {
        try await TestServer.run { server in
            try await server.modify((0..<6).map { Op.create("r\($0)") })
            try await server.modify([Op.typed("forceDelete", "r4"), Op.typed("forceDelete", "r5")])
            let entry: [String: JSONValue] = ["zoneID": ["zoneName": "_defaultZone"], "resultsLimit": 2]
            let first = try #require(try await server.call("changes/zone", ["zones": [.object(entry)]], as: server.alice).json["zones"]?[0])
            #expect(first["records"]?.arrayValue?.map { $0["recordName"] } == ["r0", "r1"])
            // Deleted after the fetch began: the client may have it (r0 it has), so its tombstone comes.
            try await server.modify([Op.typed("forceDelete", "r0")])
            let rest = try await server.pull(from: try #require(first["syncToken"]?.stringValue), limit: 2)
            #expect(rest.records.map { $0["recordName"] } == ["r2", "r3", "r0"], "\(rest.records)")
            #expect(rest.records.last?["deleted"] == true)
            #expect(try await server.pull(from: rest.token).records.isEmpty)
        }
    }

    /// The same for `changes/database`: a first fetch paged one zone at a time lists no zone deleted before it began.
    @Test func aFirstDatabaseFetchSkipsZonesDeletedBeforeItOnEveryPage() async throws {
        try await TestServer.run { server in
            let create = ["A", "B", "C"].map { JSONValue.object(["operationType": "create", "zone": ["zoneID": ["zoneName": .string($0)]]]) }
            try await server.call("zones/modify", ["operations": .array(create)], as: server.alice)
            try await server.call(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "A"]]]]], as: server.alice)
            var token: JSONValue?
            var names: [String] = []
            for _ in 0..<10 {
                var body: [String: JSONValue] = ["resultsLimit": 1]
                if let token { body["syncToken"] = token }
                let page = try await server.call("changes/database", .object(body), as: server.alice).json
                names += (page["zones"]?.arrayValue ?? []).compactMap { $0["zoneID"]?["zoneName"]?.stringValue }
                token = page["syncToken"]
                if page["moreComing"] != true { break }
            }
            #expect(!names.contains("A"), "\(names)")
            #expect(Set(names).isSuperset(of: ["B", "C"]))
        }
    }

    @Test func legacyRecordsChangesEndpointPages() async throws {
        try await TestServer.run { server in
            try await server.modify((0..<5).map { Op.create("r\($0)") })
            let reply = try await server.call("records/changes", ["zoneID": ["zoneName": "_defaultZone"], "resultsLimit": 3], as: server.alice)
            #expect(reply.records.count == 3)
            #expect(reply.json["moreComing"] == true)
            let next = try await server.call(
                "records/changes", ["zoneID": ["zoneName": "_defaultZone"], "syncToken": reply.json["syncToken"]!], as: server.alice)
            #expect(next.records.count == 2)
            #expect(next.json["moreComing"] == false)
        }
    }

    @Test func tokensOfAnotherZoneAccountOrTamperedAreRejected() async throws {
        try await TestServer.run { server in
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Other"]]]]], as: server.alice)
            let alice = try await server.pull()
            await #expect(throws: CloudError(.badRequest, "syncToken belongs to another zone")) {
                _ = try await server.pull(zone: "Other", from: alice.token)
            }
            await #expect(throws: ChangeToken.notValidHere) {
                _ = try await server.pull(from: alice.token, as: server.bob)
            }
            var tampered = Array(alice.token)
            tampered[5] = tampered[5] == "A" ? "B" : "A"
            await #expect(throws: CloudError.self) { _ = try await server.pull(from: String(tampered)) }
            let databaseToken = try await server.call("changes/database", [:], as: server.alice).json["syncToken"]!.stringValue!
            await #expect(throws: CloudError.self) { _ = try await server.pull(from: databaseToken) }
        }
    }

    @Test func purgedTombstonesExpireOlderTokensWith410() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("a"), Op.create("b")])
            let before = try await server.pull()
            try await server.modify([Op.typed("forceDelete", "a")])
            let afterDelete = try await server.pull(from: before.token)
            let purged = try await server.dependencies.records.purgeTombstones(
                olderThanMs: Int64(Date().timeIntervalSince1970 * 1000) + 1000, logger: TestDatabase.logger)
            #expect(purged.records == 1)

            let reply = try await server.call(
                "records/changes", ["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(before.token)], as: server.alice)
            #expect(reply.status == 410)
            #expect(reply.errorCode == "CHANGE_TOKEN_EXPIRED")
            #expect(reply.json["reason"] == "client knowledge differs from server knowledge")
            let zoneReply = try await server.call(
                "changes/zone", ["zones": [["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(before.token)]]], as: server.alice)
            #expect(zoneReply.status == 200)
            #expect(zoneReply.json["zones"]?[0]?["serverErrorCode"] == "CHANGE_TOKEN_EXPIRED")
            // A token taken after the deletion is still good, and so is starting over.
            #expect(try await server.pull(from: afterDelete.token).records.isEmpty)
            #expect(try await server.pull().records.count == 1)
        }
    }

    /// Regression: a device fetching a zone from nothing got page tokens below the purge horizon and was told they
    /// had expired, page after page, so it could never finish its first sync of a zone that had a purged deletion.
    @Test func aFirstFetchPagingPastAPurgeNeverExpires() async throws {
        try await TestServer.run { server in
            try await server.modify((0..<6).map { Op.create("r\($0)") })
            let before = try await server.pull()
            try await server.modify([Op.typed("forceDelete", "r5")])
            try await server.call(
                "zones/modify",
                [
                    "operations": [
                        ["operationType": "create", "zone": ["zoneID": ["zoneName": "A"]]],
                        ["operationType": "create", "zone": ["zoneID": ["zoneName": "B"]]],
                    ]
                ], as: server.alice)
            let databaseBefore = try #require(try await server.call("changes/database", [:], as: server.alice).json["syncToken"]?.stringValue)
            try await server.call(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "B"]]]]], as: server.alice)
            let purged = try await server.dependencies.records.purgeTombstones(olderThanMs: Timestamp.now + 1_000, logger: TestDatabase.logger)
            #expect(purged.records == 1 && purged.zones == 1)

            // Two records a page from nothing: every page token is below the horizon, and none may expire.
            let fresh = try await server.pull(limit: 2)
            #expect(fresh.records.compactMap { $0["recordName"]?.stringValue }.sorted() == ["r0", "r1", "r2", "r3", "r4"])
            // The zone list, one zone a page from nothing.
            var token: String?
            var zones: [String] = []
            while true {
                var body: [String: JSONValue] = ["resultsLimit": 1]
                if let token { body["syncToken"] = .string(token) }
                let reply = try await server.call("changes/database", .object(body), as: server.alice)
                #expect(reply.status == 200)
                guard reply.status == 200 else { break }
                zones += (reply.json["zones"]?.arrayValue ?? []).compactMap { $0["zoneID"]?["zoneName"]?.stringValue }
                token = reply.json["syncToken"]?.stringValue
                if reply.json["moreComing"] != true { break }
            }
            #expect(zones.sorted() == ["A", "_defaultZone"])
            // Tokens issued before the purge still expire: their holders may have had r5 and B.
            #expect(try await server.call("records/changes", ["syncToken": .string(before.token)], as: server.alice).status == 410)
            #expect(try await server.call("changes/database", ["syncToken": .string(databaseBefore)], as: server.alice).status == 410)
        }
    }

    @Test func anotherOwnersZoneFailsItsEntryOnlyLikeAMissingZone() async throws {
        try await TestServer.run { server in
            let reply = try await server.call(
                "changes/zone",
                [
                    "zones": [
                        ["zoneID": ["zoneName": "_defaultZone"]],
                        ["zoneID": ["zoneName": "_defaultZone", "ownerRecordName": .string(server.bob.account.userRecordName)]],
                        ["zoneID": ["zoneName": "Missing"]],
                    ]
                ], as: server.alice)
            #expect(reply.status == 200)
            let zones = reply.json["zones"]?.arrayValue ?? []
            #expect(zones.count == 3)
            #expect(zones.first?["syncToken"] != nil)
            #expect(zones.dropFirst().map { $0["serverErrorCode"] } == ["ZONE_NOT_FOUND", "ZONE_NOT_FOUND"])
        }
    }

    @Test func zonesAndDatabaseChanges() async throws {
        try await TestServer.run { server in
            let initial = try await server.call("changes/database", [:], as: server.alice)
            #expect(initial.json["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } == ["_defaultZone"])
            let token = try #require(initial.json["syncToken"]?.stringValue)

            let created = try await server.call(
                "zones/modify",
                [
                    "operations": [
                        ["operationType": "create", "zone": ["zoneID": ["zoneName": "Visits"]]],
                        ["operationType": "create", "zone": ["zoneID": ["zoneName": "Photos"]]],
                    ]
                ], as: server.alice)
            #expect(created.json["zones"]?.arrayValue?.count == 2)
            #expect(created.json["zones"]?[0]?["syncToken"] != nil)
            try await server.modify([Op.create("v")], zone: "Visits")

            let changed = try await server.call("changes/database", ["syncToken": .string(token)], as: server.alice)
            #expect(Set(changed.json["zones"]!.arrayValue!.compactMap { $0["zoneID"]?["zoneName"]?.stringValue }) == ["Visits", "Photos"])
            let next = try #require(changed.json["syncToken"]?.stringValue)
            let paged = try await server.call("changes/database", ["syncToken": .string(token), "resultsLimit": 1], as: server.alice)
            #expect(paged.json["moreComing"] == true)

            let visitsToken = try await server.pull(zone: "Visits").token
            try await server.call(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Visits"]]]]], as: server.alice)
            let deleted = try await server.call("changes/database", ["syncToken": .string(next)], as: server.alice)
            #expect(
                deleted.json["zones"] == [
                    [
                        "zoneID": [
                            "zoneName": "Visits", "ownerRecordName": .string(server.alice.account.userRecordName), "zoneType": "REGULAR_CUSTOM_ZONE",
                        ], "deleted": true,
                    ]
                ])

            let list = try await server.call("zones/list", as: server.alice)
            #expect(list.json["zones"]?.arrayValue?.compactMap { $0["zoneID"]?["zoneName"]?.stringValue } == ["_defaultZone", "Photos"])
            let lookup = try await server.call("zones/lookup", ["zones": [["zoneName": "Photos"], ["zoneName": "Visits"]]], as: server.alice)
            #expect(lookup.json["zones"]?[1]?["serverErrorCode"] == "ZONE_NOT_FOUND")
            let missing = try await server.modify([Op.create("x")], zone: "Visits")
            #expect(missing.status == 404)
            #expect(missing.errorCode == "ZONE_NOT_FOUND")

            // A zone created again under the same name: the old token is expired, not silently valid.
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Visits"]]]]], as: server.alice)
            await #expect(throws: CloudError.changeTokenExpired) { _ = try await server.pull(zone: "Visits", from: visitsToken) }
        }
    }

    @Test func publicDefaultZoneHasChangeTokensAsAnExtension() async throws {
        try await TestServer.run { server in
            let write = try await server.modify(
                [Op.create("stadium_mlb_oracle_park", type: "Stadium", ["name": "Oracle Park"])], database: "public", signed: true)
            #expect(write.status == 200)
            let pulled = try await server.pull(database: "public")
            #expect(pulled.records.map { $0["recordName"]?.stringValue } == ["stadium_mlb_oracle_park"])
            #expect(pulled.records[0]["zoneID"]?["ownerRecordName"] == "_defaultOwner")
        }
    }
}
