import CloudCore
import CloudHTTP
import Testing

@Suite(.bounded) struct RecordsAPITests {
    @Test func createLookupUpdateDeleteRoundTrip() async throws {
        let time = ManualClock()
        try await TestServer.run(configure: { $0.clock = time.clock }) { server in
            let created = try await server.modify([Op.create("v1", ["notes": "hi", "rating": 5, "tags": ["a", "b"]])])
            #expect(created.status == 200)
            let record = try #require(created.records.first)
            #expect(record["fields"]?["rating"] == ["type": "INT64", "value": 5])
            #expect(record["fields"]?["tags"]?["type"] == "STRING_LIST")
            #expect(record["created"]?["userRecordName"]?.stringValue == server.alice.account.userRecordName)
            let tag = try #require(record["recordChangeTag"]?.stringValue)

            let updated = try await server.modify([Op.typed("update", "v1", tag: tag, fields: ["rating": ["value": 4], "notes": [:]])])
            let after = try #require(updated.records.first)
            #expect(after["fields"]?["rating"]?["value"] == 4)
            #expect(after["fields"]?["notes"] == nil)
            #expect(after["fields"]?["tags"] != nil)
            #expect(after["recordChangeTag"]?.stringValue != tag)
            #expect(after["created"] == record["created"], "an update keeps the record's created stamp")

            let lookup = try await server.call(
                "records/lookup", ["records": [["recordName": "v1"], ["recordName": "nope"]], "desiredKeys": ["rating"]], as: server.alice)
            #expect(lookup.records.count == 2)
            #expect(lookup.records[0]["fields"] == ["rating": ["type": "INT64", "value": 4]])
            #expect(lookup.records[1]["serverErrorCode"] == "NOT_FOUND")
            #expect(lookup.records[1]["recordName"] == "nope")

            let deleted = try await server.modify([Op.typed("delete", "v1", tag: after["recordChangeTag"]?.stringValue)])
            #expect(deleted.records.first == ["recordName": "v1", "deleted": true])
            let gone = try await server.call("records/lookup", ["records": [["recordName": "v1"]]], as: server.alice)
            #expect(gone.records.first?["serverErrorCode"] == "NOT_FOUND")

            // Created again over its tombstone: a new record with a new created stamp.
            time.advance(by: .milliseconds(5))
            let again = try await server.modify([Op.create("v1")], as: server.bob)
            #expect(again.status == 200)
            let reborn = try await server.modify([Op.create("v1")])
            #expect(reborn.records.first?["created"]?["timestamp"] != record["created"]?["timestamp"])
        }
    }

    @Test func conflictsCarryTheServerRecordAndResultsKeepRequestOrder() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("a"), Op.create("b", ["n": 1])])
            let reply = try await server.modify([
                Op.typed("update", "b", tag: "stale", fields: ["n": ["value": 2]]),
                Op.create("a"),
                Op.create("c"),
                Op.typed("forceUpdate", "d", type: "Visit", fields: ["n": ["value": 3]]),
            ])
            #expect(reply.status == 200)
            try #require(reply.records.count == 4)
            #expect(reply.records.map { $0["serverErrorCode"]?.stringValue } == ["CONFLICT", "EXISTS", nil, nil])
            #expect(reply.records[0]["serverRecord"]?["fields"]?["n"]?["value"] == 1)
            #expect(reply.records[0]["serverRecord"]?["recordChangeTag"] != nil)
            #expect(reply.records[3]["fields"]?["n"]?["value"] == 3)
        }
    }

    @Test func replaceAndForceReplace() async throws {
        try await TestServer.run { server in
            let created = try await server.modify([Op.create("r", ["a": 1, "b": 2])])
            let tag = created.records[0]["recordChangeTag"]?.stringValue
            let replaced = try await server.modify([Op.typed("replace", "r", tag: tag, fields: ["c": ["value": 3]])])
            #expect(replaced.records[0]["fields"] == ["c": ["type": "INT64", "value": 3]])
            let forced = try await server.modify([Op.typed("forceReplace", "new", type: "Visit", fields: ["d": ["value": "x"]])])
            #expect(forced.records[0]["recordType"] == "Visit")
        }
    }

    @Test func atomicBatchInACustomZoneIsAllOrNothing() async throws {
        try await TestServer.run { server in
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Visits"]]]]], as: server.alice)
            try await server.modify([Op.create("taken")], zone: "Visits")
            let reply = try await server.modify([Op.create("fresh"), Op.create("taken")], zone: "Visits")
            #expect(reply.status == 400)
            #expect(reply.records.map { $0["serverErrorCode"]?.stringValue } == ["ATOMIC_ERROR", "EXISTS"])
            let lookup = try await server.call(
                "records/lookup", ["zoneID": ["zoneName": "Visits"], "records": [["recordName": "fresh"]]], as: server.alice)
            #expect(lookup.records[0]["serverErrorCode"] == "NOT_FOUND")

            // Non-atomic in the same zone: the good one lands.
            let partial = try await server.modify([Op.create("fresh"), Op.create("taken")], zone: "Visits", atomic: false)
            #expect(partial.status == 200)
            #expect(partial.records.map { $0["serverErrorCode"]?.stringValue } == [nil, "EXISTS"])
        }
    }

    /// Regression: Apple documents `desiredKeys` per lookup entry; it overrides the top-level list.
    @Test func lookupHonoursDesiredKeysPerRecord() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("r", ["a": 1, "b": 2, "c": 3])])
            let both = try await server.call(
                "records/lookup",
                [
                    "records": [["recordName": "r", "desiredKeys": ["a"]], ["recordName": "r"], ["recordName": "r", "desiredKeys": []]],
                    "desiredKeys": ["b"],
                ],
                as: server.alice)
            #expect(both.records.map { $0["fields"] } == [["a": ["type": "INT64", "value": 1]], ["b": ["type": "INT64", "value": 2]], [:]])
            let perRecordOnly = try await server.call(
                "records/lookup", ["records": [["recordName": "r", "desiredKeys": ["c"]], ["recordName": "r"]]], as: server.alice)
            #expect(perRecordOnly.records[0]["fields"] == ["c": ["type": "INT64", "value": 3]])
            #expect(perRecordOnly.records[1]["fields"]?.objectValue?.count == 3)
        }
    }

    /// Regression: in a non-atomic batch a malformed operation fails alone, as a per-record error in a 200.
    @Test func malformedOperationFailsAloneInANonAtomicBatch() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("old")])
            let reply = try await server.modify([Op.create("fresh"), Op.typed("delete", "old"), Op.typed("explode", "x")])
            #expect(reply.status == 200, "\(reply.json)")
            #expect(reply.records.map { $0["serverErrorCode"]?.stringValue } == [nil, "BAD_REQUEST", "BAD_REQUEST"])
            #expect(reply.records.map { $0["recordName"]?.stringValue } == ["fresh", "old", "x"])
            #expect(reply.records[1]["reason"]?.stringValue?.contains("recordChangeTag is required") == true)
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "fresh"], ["recordName": "old"]]], as: server.alice)
            #expect(lookup.records.map { $0["serverErrorCode"]?.stringValue } == [nil, nil], "the good create landed, the delete did not")

            // In an atomic zone the same malformed operation fails the batch: nothing lands.
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]], as: server.alice)
            try await server.modify([Op.create("old")], zone: "Z")
            let atomic = try await server.modify([Op.create("fresh"), Op.typed("delete", "old")], zone: "Z")
            #expect(atomic.status == 400)
            #expect(atomic.records.map { $0["serverErrorCode"]?.stringValue } == ["ATOMIC_ERROR", "BAD_REQUEST"])
            let none = try await server.call(
                "records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "fresh"]]], as: server.alice)
            #expect(none.records[0]["serverErrorCode"] == "NOT_FOUND")
        }
    }

    @Test func badInputIsBadRequestAndChangesNothing() async throws {
        try await TestServer.run { server in
            // A request that cannot be read at all is refused whole.
            let unreadable = [
                "{not json", "[]", #"{"operations": 5}"#, #"{"operations":[],"zoneID":{"zoneName":""}}"#,
                // PostgreSQL cannot store U+0000, so the parser refuses it anywhere in a body: never a database error.
                #"{"operations":[{"operationType":"create","record":{"recordName":"nul","recordType":"V","fields":{"f":{"value":"a\u0000b"}}}}]}"#,
            ]
            for body in unreadable {
                let reply = try await server.call("records/modify", database: "private", as: server.alice, rawBody: body)
                #expect(reply.status == 400, "\(body)")
                #expect(reply.errorCode == "BAD_REQUEST", "\(body)")
                #expect(reply.json["uuid"] != nil)
                #expect(reply.json["reason"]?.stringValue?.isEmpty == false)
            }
            // A malformed operation fails alone: the last one of each batch, after a good one that lands.
            let operations = [
                #"{"operationType":"create","record":{"recordName":"x","recordType":"V","fields":{"f":{"value":1,"type":"WHAT"}}}}"#,
                #"{"operationType":"explode","record":{"recordName":"x"}}"#,
                #"{"operationType":"create","record":{"recordName":"x","recordType":"V","fields":{"f":{"value":[]}}}}"#,
                #"{"operationType":"create"}"#, "7",
            ]
            for (index, operation) in operations.enumerated() {
                let body = #"{"operations":[{"operationType":"create","record":{"recordName":"ok\#(index)","recordType":"V"}},\#(operation)]}"#
                let reply = try await server.call("records/modify", database: "private", as: server.alice, rawBody: body)
                #expect(reply.status == 200, "\(body)")
                #expect(reply.records.map { $0["serverErrorCode"]?.stringValue } == [nil, "BAD_REQUEST"], "\(body)")
                #expect(reply.records.last?["reason"]?.stringValue?.isEmpty == false)
            }
            let changes = try await server.call("changes/zone", ["zones": [["zoneID": ["zoneName": "_defaultZone"]]]], as: server.alice)
            #expect(
                changes.json["zones"]?[0]?["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue }
                    == operations.indices.map { "ok\($0)" })
        }
    }

    @Test func limitsAreEnforcedWithClearErrors() async throws {
        try await TestServer.run { server in
            let tooMany = try await server.modify((0..<201).map { Op.create("r\($0)") })
            #expect(tooMany.status == 400)
            #expect(tooMany.json["reason"]?.stringValue?.contains("at most 200") == true)
            let big = try await server.modify([Op.create("big", ["blob": .string(String(repeating: "x", count: 1_000_001))])])
            #expect(big.anyErrorCode == "BAD_REQUEST")
            #expect(big.anyError?["reason"]?.stringValue?.contains("1000000 bytes per record") == true)
            let fine = try await server.modify((0..<200).map { Op.create("r\($0)") })
            #expect(fine.records.count == 200)
        }
    }

    @Test func numbersAsStringsAndEveryFieldType() async throws {
        try await TestServer.run { server in
            let fields: [String: JSONValue] = [
                "s": ["value": "x"], "i": ["value": 9_007_199_254_740_993], "d": ["value": 1.5],
                "t": ["value": 1_700_000_000_000, "type": "TIMESTAMP"],
                "b": ["value": "AAEC", "type": "BYTES"], "r": ["value": ["recordName": "other", "action": "NONE"], "type": "REFERENCE"],
                "l": ["value": ["latitude": 37.7786, "longitude": -122.3893, "altitude": 3.0], "type": "LOCATION"],
                "il": ["value": [1, 2], "type": "INT64_LIST"], "dl": ["value": [1.5], "type": "DOUBLE_LIST"],
                "tl": ["value": [1], "type": "TIMESTAMP_LIST"], "bl": ["value": ["AA=="], "type": "BYTES_LIST"],
                "rl": ["value": [["recordName": "x"]], "type": "REFERENCE_LIST"],
                "ll": ["value": [["latitude": 1, "longitude": 2]], "type": "LOCATION_LIST"],
                "sl": ["value": [], "type": "STRING_LIST"],
            ]
            // ASSETID and ASSETID_LIST need uploaded assets: AssetsAPITests covers them.
            let created = try await server.modify([
                ["operationType": "create", "record": ["recordName": "all", "recordType": "T", "fields": .object(fields)]]
            ])
            try #require(created.records.count == 1, "\(created.json)")
            let types = created.records[0]["fields"]?.objectValue?.mapValues { $0["type"]?.stringValue ?? "" }
            #expect(
                types == [
                    "s": "STRING", "i": "INT64", "d": "DOUBLE", "t": "TIMESTAMP", "b": "BYTES", "r": "REFERENCE", "l": "LOCATION",
                    "il": "INT64_LIST", "dl": "DOUBLE_LIST", "tl": "TIMESTAMP_LIST", "bl": "BYTES_LIST", "rl": "REFERENCE_LIST",
                    "ll": "LOCATION_LIST", "sl": "STRING_LIST",
                ])
            #expect(created.records[0]["fields"]?["i"]?["value"] == 9_007_199_254_740_993)
            let asStrings = try await server.call("records/lookup", ["records": [["recordName": "all"]], "numbersAsStrings": true], as: server.alice)
            try #require(asStrings.records.count == 1)
            let stored = asStrings.records[0]["fields"]
            #expect(stored?["i"]?["value"] == "9007199254740993")
            #expect(stored?["il"]?["value"] == ["1", "2"])
            #expect(stored?["s"]?["value"] == "x")
            #expect(stored?["l"]?["value"]?["latitude"] == 37.7786)
        }
    }

    @Test func validateReferencesMustResolveAndDeleteSelfCascades() async throws {
        try await TestServer.run { server in
            let dangling = try await server.modify([
                Op.create("photo", ["visit": ["recordName": "missing", "action": "VALIDATE"]])
            ])
            #expect(dangling.records[0]["serverErrorCode"] == "VALIDATING_REFERENCE_ERROR")
            try await server.modify([
                Op.create("visit"),
                Op.create("photo", ["visit": ["recordName": "visit", "action": "DELETE_SELF"]]),
                Op.create("thumb", ["photo": ["recordName": "photo", "action": "DELETE_SELF"]]),
                Op.create("note", ["visit": ["recordName": "visit", "action": "VALIDATE"]]),
            ])
            try await server.modify([Op.typed("forceDelete", "visit")])
            let lookup = try await server.call(
                "records/lookup", ["records": [["recordName": "photo"], ["recordName": "thumb"], ["recordName": "note"]]], as: server.alice)
            #expect(lookup.records.map { $0["serverErrorCode"]?.stringValue } == ["NOT_FOUND", "NOT_FOUND", nil])
            let changes = try await server.call("changes/zone", ["zones": [["zoneID": ["zoneName": "_defaultZone"]]]], as: server.alice)
            #expect(changes.json["zones"]?[0]?["records"]?.arrayValue?.count == 1)
        }
    }

    @Test func recordNameIsGeneratedWhenACreateHasNone() async throws {
        try await TestServer.run { server in
            let reply = try await server.modify([["operationType": "create", "record": ["recordType": "Visit"]]])
            #expect(reply.records[0]["recordName"]?.stringValue?.count == 36)
        }
    }
}
