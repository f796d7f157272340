import CloudCore
import CloudHTTP
import Testing

/// Each limit answers BAD_REQUEST with a reason that names it, and nothing is written.
@Suite(.bounded) struct LimitsTests {
    @Test func eachLimitHasAClearErrorAndWritesNothing() async throws {
        try await TestServer.run(configure: { $0.maxBodyBytes = 64 * 1024 }) { server in
            let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
            let cases: [(body: String, reason: String)] = [
                (
                    #"{"operations":[{"operationType":"create","record":{"recordName":"big","recordType":"Visit","fields":{"note":{"value":""#
                        + String(repeating: "x", count: 70_000) + #""}}}}]}"#,
                    "larger than 65536 bytes"
                ),
                (
                    #"{"operations":[{"operationType":"create","record":{"recordName":"deep","recordType":"Visit","fields":{"note":{"value":"# + deep
                        + "}}}}]}", "nested deeper than 64"
                ),
                (
                    JSONWriter.encode([
                        "operations": [Op.create("wide", Dictionary(uniqueKeysWithValues: (0..<257).map { ("f\($0)", JSONValue.int(Int64($0))) }))]
                    ]),
                    "the limit is 256 fields"
                ),
                (JSONWriter.encode(["operations": [Op.create(String(repeating: "n", count: 256))]]), "1 to 255 bytes"),
                (JSONWriter.encode(["operations": [Op.create("long-field", [String(repeating: "f", count: 256): 1])]]), "1 to 255 bytes"),
                (
                    JSONWriter.encode(["zoneID": ["zoneName": .string(String(repeating: "z", count: 256))], "operations": [Op.create("z")]]),
                    "1 to 255 bytes"
                ),
                (JSONWriter.encode(["operations": .array((0..<201).map { Op.create("op\($0)") })]), "200"),
            ]
            for (body, reason) in cases {
                let reply = try await server.call("records/modify", as: server.alice, rawBody: body)
                #expect(reply.anyErrorCode == "BAD_REQUEST", "\(reason): \(reply.json)")
                #expect(reply.anyError?["reason"]?.stringValue?.contains(reason) == true, "wanted \(reason): \(reply.json)")
            }
            let changes = try await server.pull()
            #expect(changes.records.isEmpty)
        }
    }
}
