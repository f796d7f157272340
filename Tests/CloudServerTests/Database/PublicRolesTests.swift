import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import Testing

/// Security roles on public record types: people create what a type's permissions let them, only a record's
/// creator changes or deletes it, canonical types stay the operators', and people never grow the schema.
@Suite(.bounded) struct PublicRolesTests {
    /// A public type people may create and their creators change, beside the operators' own.
    static let schema = Schema(recordTypes: [
        "Note": RecordTypeSchema(
            database: .public, fields: ["text": FieldSchema(type: .string, owner: .user)],
            permissions: RecordTypePermissions(read: .world, create: .authenticated, write: .creator)),
        "Stadium": RecordTypeSchema(database: .public, fields: ["name": FieldSchema(type: .string)]),
        "MembersNote": RecordTypeSchema(
            database: .public, fields: ["text": FieldSchema(type: .string, owner: .user, queryable: true)],
            permissions: RecordTypePermissions(read: .authenticated, create: .authenticated, write: .creator)),
    ])

    static func note(_ name: String, _ text: String, _ operation: String = "create") -> JSONValue {
        Op.typed(operation, name, type: "Note", fields: ["text": ["value": .string(text)]])
    }

    @Test func peopleCreateWhatTheTypeAllowsAndOnlyTheCreatorChangesIt() async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(Self.schema, to: TestServer.development, logger: TestDatabase.logger)
            let created = try await server.modify([Self.note("n1", "alice's")], database: "public", as: server.alice)
            #expect(created.anyError == nil, "\(created.json)")
            #expect(created.records.first?["created"]?["userRecordName"]?.stringValue == server.alice.account.userRecordName)
            let tag = try #require(created.records.first?["recordChangeTag"]?.stringValue)

            // Bob may read it, but neither change, replace nor delete it, with or without its tag.
            let read = try await server.call("records/lookup", ["records": [["recordName": "n1"]]], database: "public", as: server.bob)
            #expect(read.records.first?["fields"]?["text"]?["value"] == "alice's")
            for operation in [
                Op.typed("update", "n1", tag: tag, type: "Note", fields: ["text": ["value": "bob's"]]),
                Self.note("n1", "bob's", "forceUpdate"), Self.note("n1", "bob's", "forceReplace"),
                Op.typed("delete", "n1", tag: tag), Op.typed("forceDelete", "n1"),
            ] {
                let refused = try await server.modify([operation], database: "public", as: server.bob)
                #expect(refused.anyErrorCode == "ACCESS_DENIED", "\(operation): \(refused.json)")
            }
            // Creating over it is refused as a create of a live name is.
            #expect(try await server.modify([Self.note("n1", "bob's")], database: "public", as: server.bob).anyErrorCode == "EXISTS")
            let unchanged = try await server.call("records/lookup", ["records": [["recordName": "n1"]]], database: "public")
            #expect(unchanged.records.first?["fields"]?["text"]?["value"] == "alice's")

            // The creator changes it; an operator may do anything.
            #expect(try await server.modify([Self.note("n1", "edited", "forceUpdate")], database: "public", as: server.alice).anyError == nil)
            #expect(try await server.modify([Self.note("n1", "moderated", "forceUpdate")], database: "public", signed: true).anyError == nil)
            #expect(try await server.modify([Op.typed("forceDelete", "n1")], database: "public", as: server.alice).anyError == nil)
        }
    }

    @Test func canonicalTypesStayTheOperatorsAndPeopleNeverGrowTheSchema() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            try await records.applySchema(Self.schema, to: TestServer.development, logger: TestDatabase.logger)
            let stadium = Op.create("s1", type: "Stadium", ["name": "Oracle Park"])
            #expect(try await server.modify([stadium], database: "public", as: server.alice).anyErrorCode == "ACCESS_DENIED")
            #expect(try await server.modify([stadium], database: "public", signed: true).anyError == nil)
            let rename = Op.typed("forceUpdate", "s1", type: "Stadium", fields: ["name": ["value": "Mine"]])
            #expect(try await server.modify([rename], database: "public", as: server.alice).anyErrorCode == "ACCESS_DENIED")
            // A record of another type under the same name is not a way around the type's permissions.
            #expect(
                try await server.modify([Self.note("s1", "x", "forceReplace")], database: "public", as: server.alice).anyErrorCode == "ACCESS_DENIED")
            // Unknown types and fields are refused even in development (just in time is for operators and private data).
            #expect(try await server.modify([Op.create("u1", type: "Unicorn")], database: "public", as: server.alice).anyErrorCode == "ACCESS_DENIED")
            let extra = Op.typed("create", "n2", type: "Note", fields: ["text": ["value": "x"], "colour": ["value": "red"]])
            #expect(try await server.modify([extra], database: "public", as: server.alice).anyErrorCode == "BAD_REQUEST")
            #expect(try await records.deployedSchema(in: TestServer.development, logger: TestDatabase.logger) == Self.schema)
            // Without a signed-in person or a key, nobody writes.
            #expect(try await server.modify([Self.note("n3", "x")], database: "public").status == 403)
        }
    }

    @Test func aPersonsPublicWritesAreRateLimited() async throws {
        try await TestServer.run(configure: { $0.rateLimits.publicWritesPerAccount = RateLimit(perSecond: 0.001, burst: 3) }) { server in
            try await server.dependencies.records.applySchema(Self.schema, to: TestServer.development, logger: TestDatabase.logger)
            let three = try await server.modify((1...3).map { Self.note("n\($0)", "x") }, database: "public", as: server.alice)
            #expect(three.anyError == nil)
            let fourth = try await server.modify([Self.note("n4", "x")], database: "public", as: server.alice)
            #expect(fourth.status == 503 && fourth.errorCode == "THROTTLED")
            #expect(try await server.modify([Self.note("b1", "x")], database: "public", as: server.bob).anyError == nil)
            let absent = try await server.call("records/lookup", ["records": [["recordName": "n4"]]], database: "public")
            #expect(absent.records.first?["serverErrorCode"] == "NOT_FOUND")
        }
    }

    /// `read: authenticated`: without signing in, lookups answer AUTHENTICATION_REQUIRED, queries are refused and
    /// deltas leave the records out; a signed-in person and an operator read them everywhere.
    @Test func recordsForSignedInPeopleAreNotReadAnonymously() async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(Self.schema, to: TestServer.development, logger: TestDatabase.logger)
            let note = Op.create("m1", type: "MembersNote", ["text": "members only"])
            #expect(
                try await server.modify([note, Op.create("s1", type: "Stadium", ["name": "Oracle Park"])], database: "public", signed: true).anyError
                    == nil)
            let lookup: JSONValue = ["records": [["recordName": "m1"], ["recordName": "s1"]]]
            let query: JSONValue = ["query": ["recordType": "MembersNote"]]
            let changes: JSONValue = ["zones": [["zoneID": ["zoneName": "_defaultZone"]]]]

            let anonymous = try await server.call("records/lookup", lookup, database: "public")
            #expect(
                anonymous.records.map { $0["serverErrorCode"]?.stringValue ?? $0["recordName"]?.stringValue } == ["AUTHENTICATION_REQUIRED", "s1"])
            let refused = try await server.call("records/query", query, database: "public")
            #expect(refused.status == 421 && refused.errorCode == "AUTHENTICATION_REQUIRED")
            let delta = try await server.call("changes/zone", changes, database: "public")
            #expect(delta.json["zones"]?[0]?["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["s1"])

            for reader in [server.alice] {
                #expect(
                    try await server.call("records/lookup", lookup, database: "public", as: reader).records.allSatisfy {
                        $0["serverErrorCode"] == nil
                    })
                #expect(try await server.call("records/query", query, database: "public", as: reader).records.count == 1)
                let seen = try await server.call("changes/zone", changes, database: "public", as: reader)
                #expect(seen.json["zones"]?[0]?["records"]?.arrayValue?.count == 2)
            }
            #expect(try await server.call("records/query", query, database: "public", signed: true).records.count == 1)
        }
    }
}
