import CloudCore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Conformance with CloudKit Web Services (`../shared/reference/cloudkit-web-services.md`): every routed endpoint,
/// called with the documented request shapes and the lenient forms CloudKit JS, MistKit, OpenCloudKit and
/// requests-cloudkit send, answered in the shapes their strict decoders expect (`WireShape`).
@Suite(.bounded) struct ConformanceTests {
    /// The (method, path) pairs the tests below call. `everyRoutedEndpointIsCovered` holds it to the served OpenAPI
    /// document, which `scripts/check-openapi.py` holds to the routers: a new route must be added here, with a test.
    static let covered = Set<String>([
        "post records/modify", "post records/lookup", "post records/query", "post records/changes", "post changes/zone",
        "post changes/database", "post zones/changes", "get zones/list", "post zones/lookup", "post zones/modify",
        "post assets/upload", "post assets/rereference", "get users/current", "get users/caller",
        "post canonical/resolve", "post canonical/nearby", "post canonical/games", "post canonical/gameDates", "post canonical/match",
        "post canonical/standings",
        "post /assets/upload/{upload}", "head /assets/upload/{upload}", "get /assets/download/{owner}/{checksum}/{file}",
        "head /assets/download/{owner}/{checksum}/{file}",
        "get /signin", "post /signin", "post /signout", "get /health", "get /ready", "get /metrics", "get /openapi.yaml",
        "post changes/wait", "get subscriptions/list", "post subscriptions/list", "post subscriptions/lookup", "post subscriptions/modify",
        "post tokens/create", "post tokens/register", "post /device/1/{container}/{environment}/tokens/create",
        "post /device/1/{container}/{environment}/tokens/register", "get /webcourier/aps", "post users/delete", "post users/export",
        "get /public/1/{container}/{environment}/versions", "get /public/1/{container}/{environment}/changes/{zone}",
        "get /public/1/{container}/{environment}/snapshot",
    ]).union(unsupported.flatMap { ["get \($0)", "post \($0)"] })

    /// CloudKit endpoints this server does not offer: each answers BAD_REQUEST saying so.
    static let unsupported = ["records/resolve", "records/accept", "users/discover", "users/lookup/email", "users/lookup/id"]

    @Test func everyRoutedEndpointIsCovered() async throws {
        try await TestServer.run { server in
            let document = try await server.client.execute(uri: "/openapi.yaml", method: .get) { String(buffer: $0.body) }
            var routed = Set<String>()
            var path = ""
            for line in document.split(separator: "\n") {
                if line.hasPrefix("  /"), line.hasSuffix(":") {
                    path = String(line.dropFirst(2).dropLast()).replacingOccurrences(
                        of: "/database/1/{container}/{environment}/{database}/", with: "")
                } else if let method = ["get", "post", "head", "put", "delete"].first(where: { line.hasPrefix("    \($0):") }) {
                    routed.insert("\(method) \(path)")
                }
            }
            #expect(routed.count > 40, "the OpenAPI document was read")
            #expect(routed.subtracting(Self.covered).sorted() == [], "routed but not in the conformance suite")
            #expect(Self.covered.subtracting(routed).sorted() == [], "in the suite but not routed")
        }
    }

    /// `records/modify` as MistKit sends it (no `type` tags, `ownerName`, `application/json`, no `atomic`) and as
    /// OpenCloudKit sends it (`atomic: false`, `{}` to clear), with every field type answered with its exact tag.
    @Test func recordsModifyAcceptsEveryClientsFormAndAnswersExactTypes() async throws {
        try await TestServer.run { server in
            let owner = server.alice.account.userRecordName
            let reference: JSONValue = ["recordName": "target", "action": "NONE"]
            let location: JSONValue = ["latitude": 37.778, "longitude": -122.389]
            let fields: [String: JSONValue] = [
                "name": ["value": "Oracle Park"], "visits": ["value": 3], "rating": ["value": 4.5],
                "when": ["value": 1_718_611_850_000, "type": "TIMESTAMP"], "liked": ["value": 1],
                "blob": ["value": "AAEC", "type": "BYTES"], "place": ["value": location, "type": "LOCATION"],
                "stadium": ["value": reference, "type": "REFERENCE"],
                "tags": ["value": ["a", "b"]], "counts": ["value": [1, 2]], "scores": ["value": [1.5, 2.5]],
                "dates": ["value": [1_718_611_850_000], "type": "TIMESTAMP_LIST"], "blobs": ["value": ["AAEC"], "type": "BYTES_LIST"],
                "stadiums": ["value": [reference], "type": "REFERENCE_LIST"], "places": ["value": [location], "type": "LOCATION_LIST"],
                "empty": ["value": [], "type": "STRING_LIST"],
            ]
            let body = JSONWriter.encode([
                "operations": [
                    ["operationType": "create", "record": ["recordName": "target", "recordType": "Stadium"]],
                    ["operationType": "create", "record": ["recordName": "v1", "recordType": "Visit", "fields": .object(fields)]],
                ],
                "zoneID": ["zoneName": "_defaultZone", "ownerName": .string(owner)],
            ])
            let created = try await server.call("records/modify", as: server.alice, rawBody: body, contentType: "application/json")
            #expect(created.status == 200, "\(created.json)")
            created.records.forEach { WireShape.expectRecord($0) }
            let types = created.records.last?["fields"]?.objectValue?.mapValues { $0["type"]?.stringValue ?? "" }
            #expect(
                types == [
                    "name": "STRING", "visits": "INT64", "rating": "DOUBLE", "when": "TIMESTAMP", "liked": "INT64", "blob": "BYTES",
                    "place": "LOCATION", "stadium": "REFERENCE", "tags": "STRING_LIST", "counts": "INT64_LIST", "scores": "DOUBLE_LIST",
                    "dates": "TIMESTAMP_LIST", "blobs": "BYTES_LIST", "stadiums": "REFERENCE_LIST", "places": "LOCATION_LIST",
                    "empty": "STRING_LIST",
                ])
            #expect(created.records.last?["fields"]?["empty"]?["value"] == [], "an empty list keeps its element type")
            #expect(created.records.last?["zoneID"]?["ownerRecordName"]?.stringValue == owner)

            // OpenCloudKit: atomic false in the default zone, `{}` clears a field; numbersAsStrings on the way back.
            let tag = try #require(created.records.last?["recordChangeTag"]?.stringValue)
            let updated = try await server.call(
                "records/modify",
                [
                    "operations": [Op.typed("update", "v1", tag: tag, fields: ["name": [:], "visits": ["value": "4"]])], "atomic": false,
                    "numbersAsStrings": true,
                ], as: server.alice)
            WireShape.expectRecord(updated.records.first)
            #expect(updated.records.first?["fields"]?["name"] == nil)
            #expect(updated.records.first?["fields"]?["visits"] == ["type": "INT64", "value": "4"])

            // A record naming its own zone (documented inside each record), and every operation type's answer.
            let tag2 = try #require(updated.records.first?["recordChangeTag"]?.stringValue)
            let inZone: JSONValue = ["recordName": "v2", "recordType": "Visit", "zoneID": ["zoneName": "_defaultZone"]]
            let all = try await server.modify([
                ["operationType": "forceUpdate", "record": inZone], Op.typed("replace", "v1", tag: tag2, fields: ["rating": ["value": 5]]),
                Op.typed("forceReplace", "v3", type: "Visit"),
            ])
            #expect(all.status == 200)
            all.records.forEach { WireShape.expectRecord($0) }
            #expect(try await server.modify([Op.typed("forceDelete", "v3")]).records == [["recordName": "v3", "deleted": true]])

            // Per-record errors: each names its record, with a documented code and a reason.
            let failures = try await server.modify([
                Op.create("v2"), Op.typed("update", "v1", tag: "stale", fields: [:]), Op.typed("delete", "nope", tag: "1"),
                Op.typed("delete", "v1"), Op.create("bad", ["f": ["no": "type"]]),
            ])
            #expect(failures.status == 200)
            for (item, (code, name)) in zip(
                failures.records, [("EXISTS", "v2"), ("CONFLICT", "v1"), ("NOT_FOUND", "nope"), ("BAD_REQUEST", "v1"), ("BAD_REQUEST", "bad")])
            {
                WireShape.expectItemError(item, code, name: name)
            }
            WireShape.expectRecord(failures.records[1]["serverRecord"])

            // An atomic batch in a custom zone: 400, the culprit's code and ATOMIC_ERROR for the rest.
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
            try await server.modify([Op.create("t")], zone: "Trips")
            let atomic = try await server.modify([Op.create("u"), Op.create("t")], zone: "Trips")
            #expect(atomic.status == 400)
            WireShape.expectItemError(atomic.records[0], "ATOMIC_ERROR", name: "u")
            WireShape.expectItemError(atomic.records[1], "EXISTS", name: "t")
            // CloudKit JS reads only the top level: the reason names the culprit there.
            #expect(atomic.errorCode == "ATOMIC_ERROR")
            #expect(atomic.json["reason"]?.stringValue?.hasPrefix("record t failed with EXISTS") == true, "\(atomic.json)")
        }
    }

    @Test func recordsLookupAndQueryAnswerDocumentedShapes() async throws {
        try await TestServer.run { server in
            try await server.modify((1...3).map { Op.create("r\($0)", ["n": .int(Int64($0)), "s": "x"]) })
            let lookup = try await server.call(
                "records/lookup",
                [
                    "records": [["recordName": "r1", "desiredKeys": ["n"]], ["recordName": "r2"], ["recordName": "gone"], ["desiredKeys": []]],
                    "desiredKeys": [],
                ], as: server.alice)
            #expect(lookup.status == 200)
            WireShape.expectRecord(lookup.records[0])
            #expect(lookup.records[0]["fields"]?.objectValue?.keys.sorted() == ["n"])
            #expect(lookup.records[1]["fields"] == [:], "desiredKeys [] answers system fields only")
            WireShape.expectItemError(lookup.records[2], "NOT_FOUND", name: "gone")
            WireShape.expectItemError(lookup.records[3], "BAD_REQUEST")

            // A query in MistKit's form: zoneID always, an untyped filter value, CloudKit's ___recordId system name.
            let query: JSONValue = [
                "zoneID": ["zoneName": "_defaultZone"], "resultsLimit": 2,
                "query": [
                    "recordType": "Visit", "filterBy": [["fieldName": "s", "comparator": "EQUALS", "fieldValue": ["value": "x"]]],
                    "sortBy": [["fieldName": "n", "ascending": false]],
                ],
            ]
            let first = try await server.call("records/query", query, as: server.alice)
            first.records.forEach { WireShape.expectRecord($0) }
            #expect(first.records.map { $0["recordName"]?.stringValue } == ["r3", "r2"])
            let marker = try #require(first.json["continuationMarker"], "a marker when more results exist")
            var next = query.objectValue!
            next["continuationMarker"] = marker
            let second = try await server.call("records/query", .object(next), as: server.alice)
            #expect(second.records.map { $0["recordName"]?.stringValue } == ["r1"])
            #expect(second.json["continuationMarker"] == nil, "no marker on the last page")
            let byID = try await server.call(
                "records/query",
                [
                    "query": [
                        "recordType": "Visit", "filterBy": [["fieldName": "___recordId", "comparator": "EQUALS", "fieldValue": ["value": "r2"]]],
                    ]
                ],
                as: server.alice)
            #expect(byID.records.map { $0["recordName"]?.stringValue } == ["r2"])
            let unknown = try await server.call("records/query", ["query": ["recordType": "Visit", "sortBy": [["fieldName": ""]]]], as: server.alice)
            WireShape.expectError(unknown, "BAD_REQUEST")
        }
    }

    @Test func changesInEveryFormAnswerTokensAndTombstones() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("a"), Op.create("b")])
            let zone: JSONValue = ["zoneName": "_defaultZone"]
            let legacy = try await server.call("records/changes", ["zoneID": zone], as: server.alice)
            #expect(legacy.json["moreComing"]?.boolValue == false)
            #expect(legacy.json["reverse"]?.boolValue == false)
            legacy.records.forEach { WireShape.expectRecord($0) }
            let token = try #require(legacy.json["syncToken"])
            try await server.modify([Op.typed("forceDelete", "b")])
            let since = try await server.call("records/changes", ["zoneID": zone, "syncToken": token], as: server.alice)
            let tombstone = since.records.first
            #expect(since.records.count == 1)
            #expect(tombstone?["recordName"] == "b" && tombstone?["deleted"] == true)
            #expect(tombstone?["recordType"] == "Visit", "a tombstone carries its type (extension)")

            let zones = try await server.call(
                "changes/zone", ["zones": [["zoneID": zone], ["zoneID": ["zoneName": "Missing"]], 7]], as: server.alice)
            #expect(zones.status == 200)
            let page = zones.json["zones"]?[0]
            #expect(page?["zoneID"]?["zoneName"] == "_defaultZone")
            #expect(page?["syncToken"]?.stringValue != nil && page?["moreComing"]?.boolValue == false)
            #expect(page?["records"]?.arrayValue?.count == 1, "a first pull leaves out what was deleted")
            WireShape.expectItemError(zones.json["zones"]?[1], "ZONE_NOT_FOUND", key: "zoneID", name: "Missing")
            WireShape.expectItemError(zones.json["zones"]?[2], "BAD_REQUEST", key: "zoneID")

            for path in ["changes/database", "zones/changes"] {
                let database = try await server.call(path, [:], as: server.alice)
                #expect(database.status == 200)
                #expect(database.json["syncToken"]?.stringValue != nil)
                #expect(database.json["moreComing"]?.boolValue == false)
                #expect(database.json["zones"]?[0]?["zoneID"]?["zoneName"] == "_defaultZone", "\(path): \(database.json)")
            }
            let tampered = try await server.call("records/changes", ["zoneID": zone, "syncToken": "not-a-token"], as: server.alice)
            WireShape.expectError(tampered, "BAD_REQUEST")
        }
    }

    @Test func zonesListLookupAndModify() async throws {
        try await TestServer.run { server in
            let created = try await server.call(
                "zones/modify",
                ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]], ["operationType": "rename", "zone": [:]]]],
                as: server.alice)
            #expect(created.status == 200)
            WireShape.expectZone(created.json["zones"]?[0], "Trips")
            WireShape.expectItemError(created.json["zones"]?[1], "BAD_REQUEST", key: "zoneID")

            let list = try await server.call("zones/list", as: server.alice)
            #expect(list.json["zones"]?.arrayValue?.count == 2)
            list.json["zones"]?.arrayValue?.forEach { WireShape.expectZone($0, $0["zoneID"]?["zoneName"]?.stringValue ?? "") }

            let lookup = try await server.call(
                "zones/lookup", ["zones": [["zoneName": "Trips", "ownerName": .string(server.alice.account.userRecordName)], ["zoneName": "Nope"]]],
                as: server.alice)
            WireShape.expectZone(lookup.json["zones"]?[0], "Trips")
            WireShape.expectItemError(lookup.json["zones"]?[1], "ZONE_NOT_FOUND", key: "zoneID", name: "Nope")

            let deleted = try await server.call(
                "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
            #expect(deleted.json["zones"]?[0]?["zoneID"]?["zoneName"] == "Trips")
            #expect(deleted.json["zones"]?[0]?["deleted"] == true)
        }
    }

    /// The asset flow as CloudKit JS and MistKit run it: upload URL, raw or multipart bytes, `ASSET` in, `ASSETID` with
    /// a `${f}` download URL out, and `ASSETID_LIST`.
    @Test func assetsUploadSaveDownloadAndRereference() async throws {
        try await TestServer.run { server in
            let tokens = try await server.call(
                "assets/upload", ["tokens": [["recordType": "VisitPhoto", "fieldName": "photo", "recordName": "p"], ["recordType": "VisitPhoto"]]],
                as: server.alice)
            #expect(tokens.json["tokens"]?[0]?["recordName"] == "p" && tokens.json["tokens"]?[0]?["fieldName"] == "photo")
            WireShape.expectItemError(tokens.json["tokens"]?[1], "BAD_REQUEST")
            let url = try #require(tokens.json["tokens"]?[0]?["url"]?.stringValue)
            let bytes = TestData.bytes(3000)
            let offset = try await server.send(url, method: .head)
            #expect(offset.status == .ok)
            let raw = try JSONValue.parse(try await server.send(url, bytes).body.readableBytesView)
            let single = try #require(raw["singleFile"])
            #expect(single["fileChecksum"]?.stringValue != nil && single["size"] == 3000 && single["receipt"]?.stringValue != nil)

            let second = try await server.upload(TestData.bytes(10))
            let saved = try await server.modify([
                Op.typed("create", "p", type: "VisitPhoto", fields: ["photo": ["value": single, "type": "ASSET"]]),
                Op.typed("create", "q", type: "VisitPhoto", fields: ["photos": ["value": [single, second], "type": "ASSET_LIST"]]),
            ])
            saved.records.forEach { WireShape.expectRecord($0) }
            let photo = saved.records[0]["fields"]?["photo"]
            #expect(photo?["type"] == "ASSETID")
            #expect(saved.records[1]["fields"]?["photos"]?["type"] == "ASSETID_LIST")
            let downloadURL = try #require(photo?["value"]?["downloadURL"]?.stringValue)
            #expect(downloadURL.contains("${f}"), "CloudKit's download URLs carry a ${f} placeholder")
            let download = try await server.send(downloadURL.replacingOccurrences(of: "${f}", with: "photo.jpg"), method: .get)
            #expect(Array(download.body.readableBytesView) == bytes)
            // HEAD: the size and the ETag, no bytes (it answered 404).
            let head = try await server.send(downloadURL.replacingOccurrences(of: "${f}", with: "photo.jpg"), method: .head)
            #expect(head.status == .ok)
            #expect(head.headers[.contentLength] == String(bytes.count))
            #expect(head.headers[.eTag] == download.headers[.eTag] && head.headers[.eTag] != nil)
            #expect(head.body.readableBytes == 0)

            let receipts = try await server.call(
                "assets/rereference", ["assets": [["recordName": "p", "fieldName": "photo"], ["recordName": "p"]]], as: server.alice)
            let receipt = receipts.json["assets"]?[0]
            #expect(receipt?["fileChecksum"] == single["fileChecksum"] && receipt?["receipt"]?.stringValue != nil)
            WireShape.expectItemError(receipts.json["assets"]?[1], "BAD_REQUEST", name: "p")
        }
    }

    /// CloudKit JS signs in an operator with a server-to-server key by calling `users/caller` signed. A 421 there was
    /// sent again by every fetch implementation with the same signature, and the replay guard refused the copy: a signed
    /// request is never answered 421.
    @Test func aSignedRequestIsTheOperatorAndNeverAskedToSignIn() async throws {
        try await TestServer.run { server in
            for path in ["users/caller", "users/current"] {
                let reply = try await server.call(path, database: "public", signed: true)
                #expect(reply.status == 200, "\(path): \(reply.json)")
                #expect(reply.json["userRecordName"] == "_operator", "\(path)")
            }
            let subscriptions = try await server.call("subscriptions/list", database: "public", signed: true)
            WireShape.expectError(subscriptions, "ACCESS_DENIED")
            #expect(subscriptions.status == 403)
        }
    }

    @Test func usersUnderEveryDatabaseAndAuthenticationErrors() async throws {
        try await TestServer.run { server in
            for database in ["private", "public", "shared"] {
                let current = try await server.call("users/current", database: database, as: server.alice)
                #expect(current.json["userRecordName"]?.stringValue == server.alice.account.userRecordName, "\(database)")
                let caller = try await server.call("users/caller", database: database, as: server.alice)
                #expect(caller.json["users"]?[0]?["userRecordName"]?.stringValue == server.alice.account.userRecordName, "\(database)")
                // CloudKit JS takes the whole body as the identity.
                #expect(caller.json["userRecordName"]?.stringValue == server.alice.account.userRecordName, "\(database)")
            }
            // The rotated token comes back in the header CloudKit JS reads; `ckSession` is the older name of the parameter.
            let rotated = try await server.call("zones/list", as: server.alice)
            #expect(rotated.headers[HTTPField.Name("X-Apple-CloudKit-Web-Auth-Token")!] != nil)
            let session = try await server.client.execute(
                uri: "\(TestServer.base)/private/zones/list?ckAPIToken=\(server.apiToken)&ckSession=\(server.alice.webAuthToken)", method: .get
            ) { $0 }
            #expect(session.status == .ok)
            let anonymous = try await server.call("users/current", database: "public")
            WireShape.expectError(anonymous, "AUTHENTICATION_REQUIRED")
            #expect(anonymous.json["redirectURL"]?.stringValue?.hasSuffix("/signin") == true)
            WireShape.expectError(try await server.call("zones/list", apiToken: String(repeating: "0", count: 64)), "AUTHENTICATION_FAILED")
        }
    }

    @Test func unsupportedEndpointsSaySo() async throws {
        try await TestServer.run { server in
            for path in Self.unsupported {
                for body: JSONValue? in [nil, [:]] {
                    let reply = try await server.call(path, body, as: server.alice)
                    WireShape.expectError(reply, "BAD_REQUEST")
                    #expect(reply.json["reason"]?.stringValue?.contains("not supported") == true, "\(path)")
                }
            }
        }
    }

    /// The extensions answer in the same envelope: bad input is a documented error, never a 500.
    @Test func canonicalExtensionsAnswerInTheCloudKitEnvelope() async throws {
        try await TestServer.run { server in
            let paths = ["canonical/resolve", "canonical/nearby", "canonical/games", "canonical/gameDates", "canonical/match", "canonical/standings"]
            for path in paths {
                WireShape.expectError(try await server.call(path, ["unexpected": 1], database: "public"), "BAD_REQUEST")
                WireShape.expectError(try await server.call(path, [:], database: "private", as: server.alice), "BAD_REQUEST")
            }
            let games = try await server.call("canonical/games", ["date": "2025-03-18"], database: "public")
            #expect(games.status == 200, "\(games.json)")
        }
    }

    @Test func operationsAndSignInEndpoints() async throws {
        try await TestServer.run { server in
            let health = try await server.client.execute(uri: "/health", method: .get) { try JSONValue.parse($0.body.readableBytesView) }
            #expect(health == ["status": "ok"])
            let ready = try await server.client.execute(uri: "/ready", method: .get) { $0 }
            #expect(ready.status == .ok)
            let metrics = try await server.client.execute(uri: "/metrics", method: .get) { $0 }
            #expect(metrics.status == .ok)
            let page = try await server.client.execute(uri: "/signin", method: .get) { $0 }
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            let refused = try await server.client.execute(
                uri: "/signin", method: .post, body: ByteBuffer(string: #"{"accountName":"alice","password":"wrong horse battery"}"#)
            ) { $0 }
            #expect(refused.status.code == 401)
            #expect(try JSONValue.parse(refused.body.readableBytesView)["serverErrorCode"] == "AUTHENTICATION_FAILED")
            let signout = try await server.client.execute(uri: "/signout?ckWebAuthToken=\(server.bob.webAuthToken)", method: .post) { $0 }
            #expect(signout.status == .ok)
        }
    }
}
