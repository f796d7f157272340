import CloudCore
import Testing

@Suite(.bounded) struct QueryTests {
    /// Oracle Park, Levi's Stadium and Dodger Stadium, with a few fields to filter on.
    static func seed(_ server: TestServer) async throws {
        try await server.modify([
            Op.create(
                "oracle", type: "Stadium",
                [
                    "name": "Oracle Park", "capacity": 41_915, "opened": 2000, "sports": ["baseball"],
                    "location": ["latitude": 37.7786, "longitude": -122.3893], "league": ["recordName": "mlb"],
                ]),
            Op.create(
                "levis", type: "Stadium",
                [
                    "name": "Levi's Stadium", "capacity": 68_500, "opened": 2014, "sports": ["football", "soccer"],
                    "location": ["latitude": 37.4030, "longitude": -121.9700], "league": ["recordName": "nfl"],
                ]),
            Op.create(
                "dodger", type: "Stadium",
                [
                    "name": "Dodger Stadium", "capacity": 56_000, "opened": 1962, "sports": ["baseball"],
                    "location": ["latitude": 34.0739, "longitude": -118.2400], "league": ["recordName": "mlb"],
                ]),
            Op.create("visit", type: "Visit", ["name": "Oracle Park"]),
        ])
    }

    static func names(_ server: TestServer, filters: [JSONValue] = [], sorts: [JSONValue] = [], extra: [String: JSONValue] = [:]) async throws
        -> [String]
    {
        var body = extra
        body["query"] = ["recordType": "Stadium", "filterBy": .array(filters), "sortBy": .array(sorts)]
        let reply = try await server.call("records/query", .object(body), as: server.alice)
        #expect(reply.status == 200, "\(reply.json)")
        return reply.records.compactMap { $0["recordName"]?.stringValue }
    }

    static func filter(_ comparator: String, _ field: String, _ value: JSONValue, type: String? = nil) -> JSONValue {
        var fieldValue: [String: JSONValue] = ["value": value]
        if let type { fieldValue["type"] = .string(type) }
        return ["comparator": .string(comparator), "fieldName": .string(field), "fieldValue": .object(fieldValue)]
    }

    @Test func aZoneWideQueryNamesEachRecordsOwnZone() async throws {
        try await TestServer.run { server in
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: server.alice)
            try await server.modify([Op.create("home", ["n": 1])], as: server.alice)
            try await server.modify([Op.create("away", ["n": 2])], zone: "Trips", as: server.alice)
            let reply = try await server.call("records/query", ["zoneWide": true, "query": ["recordType": "Visit"]], as: server.alice)
            var zones: [String: String] = [:]
            for record in reply.records {
                zones[record["recordName"]?.stringValue ?? ""] = record["zoneID"]?["zoneName"]?.stringValue
            }
            #expect(zones == ["home": "_defaultZone", "away": "Trips"], "\(reply.json)")
        }
    }

    @Test func comparatorsFilter() async throws {
        try await TestServer.run { server in
            try await Self.seed(server)
            let sort: [JSONValue] = [["systemFieldName": "recordName"]]
            #expect(try await Self.names(server, filters: [Self.filter("EQUALS", "name", "Oracle Park")]) == ["oracle"])
            #expect(try await Self.names(server, filters: [Self.filter("NOT_EQUALS", "name", "Oracle Park")], sorts: sort) == ["dodger", "levis"])
            #expect(try await Self.names(server, filters: [Self.filter("GREATER_THAN", "capacity", 50_000)], sorts: sort) == ["dodger", "levis"])
            #expect(try await Self.names(server, filters: [Self.filter("LESS_THAN_OR_EQUALS", "opened", 2000)], sorts: sort) == ["dodger", "oracle"])
            #expect(
                try await Self.names(server, filters: [Self.filter("IN", "opened", [1962, 2014], type: "INT64_LIST")], sorts: sort) == [
                    "dodger", "levis",
                ])
            #expect(
                try await Self.names(server, filters: [Self.filter("NOT_IN", "opened", [1962], type: "INT64_LIST")], sorts: sort) == [
                    "levis", "oracle",
                ])
            #expect(try await Self.names(server, filters: [Self.filter("BEGINS_WITH", "name", "Do")]) == ["dodger"])
            #expect(try await Self.names(server, filters: [Self.filter("LIST_CONTAINS", "sports", "soccer")]) == ["levis"])
            #expect(
                try await Self.names(server, filters: [Self.filter("EQUALS", "league", ["recordName": "mlb"], type: "REFERENCE")], sorts: sort) == [
                    "dodger", "oracle",
                ])
            #expect(
                try await Self.names(
                    server,
                    filters: [
                        Self.filter("GREATER_THAN", "capacity", 40_000), Self.filter("LESS_THAN", "capacity", 60_000),
                    ], sorts: sort) == ["dodger", "oracle"])
            #expect(
                try await Self.names(
                    server,
                    filters: [
                        [
                            "comparator": "EQUALS", "systemFieldName": "recordName",
                            "fieldValue": ["value": ["recordName": "levis"], "type": "REFERENCE"],
                        ]
                    ]) == ["levis"])
        }
    }

    @Test func nearAndLessThanDistanceAgreeAndSortByDistance() async throws {
        try await TestServer.run { server in
            try await Self.seed(server)
            let sanFrancisco: JSONValue = ["latitude": 37.7749, "longitude": -122.4194]
            for comparator in ["NEAR", "LESS_THAN"] {
                var filter = Self.filter(comparator, "location", sanFrancisco, type: "LOCATION").objectValue!
                filter["distance"] = 60_000
                #expect(
                    try await Self.names(
                        server, filters: [.object(filter)],
                        sorts: [["fieldName": "location", "relativeLocation": ["value": sanFrancisco, "type": "LOCATION"]]]) == ["oracle", "levis"])
            }
            let all = try await Self.names(
                server, sorts: [["fieldName": "location", "relativeLocation": ["value": sanFrancisco], "ascending": false]])
            #expect(all == ["dodger", "levis", "oracle"])
            #expect(try await Self.names(server, sorts: [["fieldName": "capacity", "ascending": false]]) == ["levis", "dodger", "oracle"])
        }
    }

    @Test func pagesWithContinuationMarkers() async throws {
        try await TestServer.run { server in
            try await server.modify((0..<7).map { Op.create("s\($0)", type: "Stadium", ["n": .int(Int64($0))]) })
            var marker: JSONValue?
            var seen: [String] = []
            let query: JSONValue = ["recordType": "Stadium", "sortBy": [["fieldName": "n"]]]
            repeat {
                var body: [String: JSONValue] = ["query": query, "resultsLimit": 3]
                if let marker { body["continuationMarker"] = marker }
                let reply = try await server.call("records/query", .object(body), as: server.alice)
                seen += reply.records.compactMap { $0["recordName"]?.stringValue }
                marker = reply.json["continuationMarker"]
            } while marker != nil
            #expect(seen == (0..<7).map { "s\($0)" })

            let first = try await server.call("records/query", ["query": query, "resultsLimit": 3], as: server.alice)
            let otherQuery = try await server.call(
                "records/query", ["query": ["recordType": "Visit"], "continuationMarker": first.json["continuationMarker"]!], as: server.alice)
            #expect(otherQuery.errorCode == "BAD_REQUEST")
        }
    }

    /// Under a deployed schema, as in CloudKit: filters on queryable fields, sorts on sortable ones, declared types.
    @Test func queriesOnFieldsTheSchemaDoesNotIndexAreRefused() async throws {
        try await TestServer.runImported(try CanonicalFixtures.dataset.get()) { server in
            func query(_ query: JSONValue) async throws -> TestServer.Reply {
                try await server.call("records/query", ["query": query], database: "public")
            }
            let fine = try await query([
                "recordType": "Stadium", "filterBy": [["comparator": "EQUALS", "fieldName": "city", "fieldValue": ["value": "San Francisco"]]],
                "sortBy": [["fieldName": "name"]],
            ])
            #expect(fine.status == 200)
            #expect(!fine.records.isEmpty)
            for (bad, reason) in [
                (
                    ["recordType": "Stadium", "filterBy": [["comparator": "EQUALS", "fieldName": "timeZone", "fieldValue": ["value": "x"]]]]
                        as JSONValue,
                    "field timeZone of Stadium is not marked queryable"
                ),
                (["recordType": "Stadium", "sortBy": [["fieldName": "country"]]], "field country of Stadium is not marked sortable"),
                (["recordType": "Stadium", "sortBy": [["fieldName": "colour"]]], "Stadium has no field colour"),
                (["recordType": "Unicorn"], "Unicorn is not in the schema"),
            ] {
                let reply = try await query(bad)
                WireShape.expectError(reply, "BAD_REQUEST")
                #expect(reply.json["reason"]?.stringValue?.contains(reason) == true, "\(reply.json)")
            }
            // System fields always qualify.
            let system = try await query(["recordType": "Stadium", "sortBy": [["systemFieldName": "modifiedTimestamp"]]])
            #expect(system.status == 200)
        }
    }

    @Test func badQueriesAreBadRequests() async throws {
        try await TestServer.run { server in
            for body: JSONValue in [
                [:], ["query": [:]],
                [
                    "query": [
                        "recordType": "Stadium", "filterBy": [["comparator": "SOUNDS_LIKE", "fieldName": "name", "fieldValue": ["value": "x"]]],
                    ]
                ],
                [
                    "query": [
                        "recordType": "Stadium",
                        "filterBy": [["comparator": "NEAR", "fieldName": "l", "fieldValue": ["value": ["latitude": 1, "longitude": 1]]]],
                    ]
                ],
                [
                    "query": [
                        "recordType": "Stadium", "filterBy": [["comparator": "EQUALS", "systemFieldName": "nope", "fieldValue": ["value": "x"]]],
                    ]
                ],
                ["query": ["recordType": "Stadium"], "continuationMarker": "forged"],
                [
                    "query": [
                        "recordType": "Stadium", "filterBy": [["comparator": "EQUALS", "fieldName": "name", "fieldValue": ["value": "a\u{0}b"]]],
                    ]
                ],
                ["query": ["recordType": "Stadium"], "desiredKeys": ["a\u{0}"]],
            ] {
                let reply = try await server.call("records/query", body, as: server.alice)
                #expect(reply.status == 400, "\(body)")
                #expect(reply.errorCode == "BAD_REQUEST")
            }
        }
    }
}
