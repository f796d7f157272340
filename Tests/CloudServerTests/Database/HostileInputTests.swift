import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Inputs found by reading for crashes (and by the fuzz run): each must be a clear 400, never a crash or a 500.
@Suite(.bounded) struct HostileInputTests {
    @Test func outOfRangeTimestampsAreBadRequests() async throws {
        try await TestServer.run { server in
            for value: JSONValue in [1e300, -1e300, "nan", "inf", "1e300"] {
                let query = try await server.call(
                    "records/query",
                    [
                        "query": [
                            "recordType": "Stadium",
                            "filterBy": [
                                ["fieldName": "openedAt", "comparator": "GREATER_THAN", "fieldValue": ["value": value, "type": "TIMESTAMP"]]
                            ],
                        ]
                    ],
                    database: "public")
                #expect(query.status == 400, "\(value): \(query.json)")
                let write = try await server.modify(
                    [Op.create("t", ["when": ["value": value, "type": "TIMESTAMP"]].mapValues { $0 })], as: server.alice)
                #expect(write.anyErrorCode == "BAD_REQUEST", "\(value): \(write.json)")
            }
        }
    }

    @Test func textThatIsNotUTF8IsABadRequestAndStoresNothing() async throws {
        try await TestServer.run { server in
            let record = #"{"operations":[{"operationType":"create","record":{"recordName":"latin1","recordType":"StadiumVisit","#
            let body = Array((record + #""fields":{"notes":{"value":"caf"#).utf8) + [0xE9] + Array(#""}}}}]}"#.utf8)
            let uri =
                "/database/1/\(TestServer.development.container)/development/private/records/modify"
                + "?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.alice.webAuthToken)"
            let answer = try await server.client.execute(
                uri: uri, method: .post, headers: [.contentType: "text/plain"], body: ByteBuffer(bytes: body)
            ) { (Int($0.status.code), try JSONValue.parse($0.body.readableBytesView)) }
            #expect(answer.0 == 400)
            #expect(answer.1["serverErrorCode"] == "BAD_REQUEST")
            #expect(answer.1["reason"]?.stringValue?.contains("UTF-8") == true, "\(answer.1)")
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "latin1"]]], as: server.alice)
            #expect(lookup.anyErrorCode == "NOT_FOUND", "\(lookup.json)")
        }
    }

    /// `\ud800` names no character: stored as U+FFFD, two devices' different bad names would be one record. Each
    /// place a client names or sends text refuses it like bytes that are not UTF-8, and writes nothing, not even a
    /// just-in-time schema field; a proper pair (😀) still works in each place.
    @Test func unpairedSurrogateEscapesAreBadRequestsAndStoreNothing() async throws {
        try await TestServer.run { server in
            // Each body names or sends text in one place, `?` standing for the escape.
            func create(_ record: String, zone: String = "") -> String {
                #"{\#(zone)"operations":[{"operationType":"create","record":{"recordType":"Visit",\#(record)}}]}"#
            }
            let bodies: [(path: String, body: String)] = [
                ("records/modify", create(#""recordName":"visit-?""#)),
                ("records/modify", create(#""recordName":"n","fields":{"note?":{"value":"x"}}"#)),
                ("records/modify", create(#""recordName":"v","fields":{"note":{"value":"?"}}"#)),
                (
                    "records/modify",
                    create(#""recordName":"r","fields":{"link":{"type":"REFERENCE","value":{"recordName":"visit-?","action":"NONE"}}}"#)
                ),
                ("zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Trips?"}}}]}"#),
                ("records/modify", create(#""recordName":"z""#, zone: #""zoneID":{"zoneName":"Trips?"},"#)),
                (
                    "records/query",
                    #"{"query":{"recordType":"Visit","filterBy":[{"fieldName":"note","comparator":"EQUALS","fieldValue":{"value":"?"}}]}}"#
                ),
                (
                    "subscriptions/modify",
                    #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"sub-?","subscriptionType":"database"}}]}"#
                ),
            ]
            func stored() async throws -> [JSONValue] {
                [
                    try await server.call("records/query", ["query": ["recordType": "Visit"]], as: server.alice).json,
                    try await server.call("zones/list", as: server.alice).json,
                    try await server.call("subscriptions/list", as: server.alice).json,
                ]
            }
            let before = try await stored()
            let schemaBefore = try await server.dependencies.records.deployedSchema(in: TestServer.development, logger: TestDatabase.logger)
            // A lone high surrogate (also at the end of a string), a lone low one, a high one before a non-low escape.
            for unpaired in [#"\ud800"#, #"\uDC00"#, #"\ud800\u0041"#] {
                for (path, body) in bodies {
                    let reply = try await server.call(path, as: server.alice, rawBody: body.replacingOccurrences(of: "?", with: unpaired))
                    #expect(reply.status == 400, "\(path) \(unpaired): \(reply.json)")
                    #expect(reply.errorCode == "BAD_REQUEST", "\(path) \(unpaired): \(reply.json)")
                    #expect(reply.json["reason"]?.stringValue?.contains("not valid UTF-8") == true, "\(path) \(unpaired): \(reply.json)")
                }
            }
            #expect(try await stored() == before)
            #expect(try await server.dependencies.records.deployedSchema(in: TestServer.development, logger: TestDatabase.logger) == schemaBefore)
            for (path, body) in bodies {
                let reply = try await server.call(path, as: server.alice, rawBody: body.replacingOccurrences(of: "?", with: #"\ud83d\ude00"#))
                #expect(reply.status == 200 && reply.anyError == nil, "\(path): \(reply.json)")
            }
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "visit-😀"]]], as: server.alice)
            #expect(lookup.records.first?["recordName"] == "visit-😀", "\(lookup.json)")
        }
    }

    @Test func farAwayCanonicalDatesAreBadRequests() async throws {
        try await TestServer.run { server in
            for date: JSONValue in ["999999999-01-01", "-999999999-01-01", .int(Int64.max), .int(Int64.min)] {
                let resolve = try await server.call("canonical/resolve", ["name": "Oracle Park", "date": date], database: "public")
                #expect(resolve.status == 400, "\(date): \(resolve.json)")
                let nearby = try await server.call("canonical/nearby", ["latitude": 37.77, "longitude": -122.39, "date": date], database: "public")
                #expect(nearby.status == 400, "\(date): \(nearby.json)")
            }
        }
    }

    @Test func signInWithAFormBodyAndAJSONAcceptGetsJSON() async throws {
        try await TestServer.run { server in
            try await server.dependencies.credentials.setPassword(
                accountName: "alice", password: "correct horse battery", logger: TestDatabase.logger)
            let reply = try await server.client.execute(
                uri: "/signin", method: .post, headers: [.contentType: "application/x-www-form-urlencoded", .accept: "application/json"],
                body: .init(string: "accountName=alice&password=correct+horse+battery")
            ) { $0 }
            #expect(reply.status == .ok)
            #expect(try JSONValue.parse(reply.body.readableBytesView)["ckWebAuthToken"] != nil)
        }
    }

    /// A form body with a bare `=` (found by the fuzz run) killed the process: an empty pair split into nothing.
    @Test func formBodiesWithEmptyPairsAreReadNotFatal() async throws {
        try await TestServer.run { server in
            for path in ["/signin", "/console/signin"] {
                for body in ["=", "=&=%C3%87P&&accountName=alice", "&=x&password"] {
                    let reply = try await server.client.execute(
                        uri: path, method: .post, headers: [.contentType: "application/x-www-form-urlencoded"], body: .init(string: body)
                    ) { $0 }
                    #expect((400..<500).contains(reply.status.code), "\(path) \(body): \(reply.status)")
                }
            }
        }
    }

    @Test func usersEndpointsCheckTheContainerLikeEveryOther() async throws {
        try await TestServer.run { server in
            let reply = try await server.client.execute(
                uri:
                    "/database/1/iCloud.com.elsewhere/development/public/users/current?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.alice.webAuthToken)",
                method: .get
            ) { $0 }
            #expect(reply.status.code == 404)
            let shared = try await server.call("users/current", database: "shared", as: server.alice)
            #expect(shared.status == 200, "users/* accepts every database segment (reference §1)")
        }
    }
}
