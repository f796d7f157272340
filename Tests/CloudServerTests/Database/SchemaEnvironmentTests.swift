import CloudCore
import CloudHTTP
@testable import CloudPostgres
import Foundation
import PostgresNIO
import Testing

/// Schemas per container and environment, the CloudKit way: development grows just in time, production only by
/// `schema deploy`, destructive deploys are refused, and a schema from before (one for every container) is adopted.
@Suite(.bounded) struct SchemaEnvironmentTests {
    static let container = TestServer.development.container
    static let production = SchemaScope(container: container, environment: "production")

    /// A fresh install before any `schema deploy`: production refuses every record type, as CloudKit's refuses what
    /// was never deployed, and says how to deploy; development takes what it is given.
    @Test func productionWithNothingDeployedRefusesEveryWrite() async throws {
        try await TestServer.run { server in
            let refused = try await server.modify([Op.create("v1", type: "StadiumVisit", ["mood": "fine"])], environment: "production")
            #expect(refused.anyErrorCode == "BAD_REQUEST")
            #expect(refused.anyError?["reason"]?.stringValue?.contains("stadiumcloud schema deploy") == true, "\(refused.json)")
            #expect(try await server.call("records/lookup", ["records": [["recordName": "v1"]]], environment: "production", as: server.alice)
                .records.first?["serverErrorCode"] == "NOT_FOUND")
            let operatorWrite = try await server.modify(
                [Op.create("s1", type: "Stadium", ["name": "Nowhere Park"])], database: "public", environment: "production", signed: true)
            #expect(operatorWrite.anyErrorCode == "BAD_REQUEST")
            #expect(try await server.modify([Op.create("v1", type: "StadiumVisit", ["mood": "fine"])]).anyError == nil)
        }
    }

    @Test func aFieldWrittenInDevelopmentIsRefusedInProductionUntilDeployed() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let logger = TestDatabase.logger
            try await records.applySchema(try CanonicalFixtures.schema.get(), to: TestServer.development, logger: logger)
            try await records.deploySchema(container: Self.container, logger: logger)

            // Development: a new field and a new record type are added just in time, typed by their values.
            let grown = try await server.modify([
                Op.create("v1", type: "StadiumVisit", ["mood": "great"]), Op.create("n1", type: "TripNote", ["text": "hello", "stops": 3]),
            ])
            #expect(grown.status == 200 && grown.anyError == nil, "\(grown.json)")
            let development = try #require(try await records.deployedSchema(in: TestServer.development, logger: logger))
            #expect(development.recordTypes["StadiumVisit"]?.fields["mood"] == FieldSchema(type: .string))
            #expect(
                development.recordTypes["TripNote"]
                    == RecordTypeSchema(database: .private, fields: ["text": FieldSchema(type: .string), "stops": FieldSchema(type: .int64)]))
            // Not queryable until marked so.
            let query = try await server.call(
                "records/query",
                [
                    "query": [
                        "recordType": "StadiumVisit", "filterBy": [["fieldName": "mood", "comparator": "EQUALS", "fieldValue": ["value": "great"]]],
                    ]
                ],
                as: server.alice)
            #expect(query.errorCode == "BAD_REQUEST")
            #expect(query.json["reason"]?.stringValue?.contains("not marked queryable") == true)
            // A value that contradicts a declared type is refused in development too.
            #expect(try await server.modify([Op.create("v9", type: "StadiumVisit", ["notes": 5])]).anyErrorCode == "BAD_REQUEST")

            // Production is strict until the development schema is deployed.
            let early = try await server.modify([Op.create("v2", type: "StadiumVisit", ["mood": "fine"])], environment: "production")
            #expect(early.anyErrorCode == "BAD_REQUEST")
            #expect(early.anyError?["reason"]?.stringValue?.contains("mood") == true)
            let deployed = try await records.deploySchema(container: Self.container, logger: logger)
            #expect(deployed.additive == ["field StadiumVisit.mood", "record type TripNote"])
            #expect(deployed.destructive.isEmpty)
            let later = try await server.modify([Op.create("v2", type: "StadiumVisit", ["mood": "fine"])], environment: "production")
            #expect(later.status == 200 && later.anyError == nil, "\(later.json)")
            // Production never grows by itself; deploying again changes nothing.
            let strict = try await server.modify([Op.create("v3", type: "StadiumVisit", ["weather": "rain"])], environment: "production")
            #expect(strict.anyErrorCode == "BAD_REQUEST")
            #expect(try await records.deployedSchema(in: Self.production, logger: logger)?.recordTypes["StadiumVisit"]?.fields["weather"] == nil)
            #expect(try await records.deploySchema(container: Self.container, logger: logger).isEmpty)
        }
    }

    @Test func destructiveDeploysAreRefusedWithReasons() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let logger = TestDatabase.logger
            await #expect(throws: CloudError.self) { try await records.deploySchema(container: Self.container, logger: logger) }
            let schema = try CanonicalFixtures.schema.get()
            try await records.applySchema(schema, to: TestServer.development, logger: logger)
            // Production holds what development lacks (a field, another type for a field): deploying would lose them.
            var ahead = schema
            ahead.recordTypes["StadiumVisit"]!.fields["legacy"] = FieldSchema(type: .string, owner: .user)
            ahead.recordTypes["StadiumVisit"]!.fields["notes"] = FieldSchema(type: .int64, owner: .user)
            try await records.applySchema(ahead, to: Self.production, logger: logger)
            await #expect {
                try await records.deploySchema(container: Self.container, logger: logger)
            } throws: { error in
                let reason = (error as? CloudError)?.reason ?? ""
                return reason.contains("field StadiumVisit.legacy would be removed") && reason.contains("would change type from INT64 to STRING")
            }
            #expect(try await records.deployedSchema(in: Self.production, logger: logger) == ahead)
        }
    }

    /// A database from before schemas were per container: the schema deployed then, and records written under it.
    @Test func theSchemaDeployedBeforeIsAdoptedByEachEnvironmentOfTheContainer() async throws {
        try await TestServer.run(configure: { $0.justInTimeSchema = false }) { server in
            let records = server.dependencies.records
            let logger = TestDatabase.logger
            let legacy = try CanonicalFixtures.schema.get()
            let definition = String(decoding: try JSONEncoder().encode(legacy), as: UTF8.self)
            try await records.client.query("INSERT INTO schema_versions (definition, deployed_ms) VALUES (\(definition)::jsonb, 0)", logger: logger)
            #expect(try await server.modify([Op.create("v1", type: "StadiumVisit", ["notes": "before"])]).anyError == nil)

            try await records.adoptGlobalSchema(containers: [Self.container], logger: logger)
            try await records.adoptGlobalSchema(containers: [Self.container], logger: logger)
            for scope in [TestServer.development, Self.production] {
                #expect(try await records.deployedSchema(in: scope, logger: logger) == legacy)
            }
            var versions = 0
            for try await count in try await records.client.query("SELECT count(*)::int FROM schema_versions", logger: logger).decode(Int.self) {
                versions = count
            }
            #expect(versions == 3)
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "v1"]]], as: server.alice)
            #expect(lookup.records.first?["fields"]?["notes"]?["value"] == "before")
            #expect(try await server.modify([Op.create("v2", type: "StadiumVisit", ["mood": "x"])]).anyErrorCode == "BAD_REQUEST")
        }
    }

    /// A `searchable` STRING field: word search with CONTAINS_ALL_TOKENS / CONTAINS_ANY_TOKENS over a full-text
    /// index built concurrently; other fields refuse it, as CloudKit does.
    @Test func searchableFieldsAnswerWordSearches() async throws {
        try await TestServer.run(configure: { $0.justInTimeSchema = false }) { server in
            let records = server.dependencies.records
            let schema = Schema(recordTypes: [
                "Trip": RecordTypeSchema(
                    database: .private,
                    fields: ["notes": FieldSchema(type: .string, owner: .user, searchable: true), "title": FieldSchema(type: .string, owner: .user)])
            ])
            let changes = try await records.applySchema(schema, to: TestServer.development, logger: TestDatabase.logger)
            #expect(changes.additive == ["record type Trip"])
            var indexes = 0
            for try await count in try await records.client.query(
                "SELECT count(*)::int FROM pg_indexes WHERE indexname LIKE 'records_words_%'", logger: TestDatabase.logger
            ).decode(Int.self) { indexes = count }
            #expect(indexes == 1)
            #expect(
                try await server.modify([
                    Op.create("t1", type: "Trip", ["notes": "Great garlic fries at Oracle Park!", "title": "SF"]),
                    Op.create("t2", type: "Trip", ["notes": "Fenway franks; garlic-free", "title": "Boston"]),
                    Op.create("t3", type: "Trip", ["notes": "Rain delay", "title": "Seattle"]),
                ]).anyError == nil)
            func search(_ comparator: String, _ text: String, field: String = "notes") async throws -> TestServer.Reply {
                try await server.call(
                    "records/query",
                    [
                        "query": [
                            "recordType": "Trip",
                            "filterBy": [["fieldName": .string(field), "comparator": .string(comparator), "fieldValue": ["value": .string(text)]]],
                        ]
                    ],
                    as: server.alice)
            }
            func names(_ reply: TestServer.Reply) -> Set<String> { Set(reply.records.compactMap { $0["recordName"]?.stringValue }) }
            #expect(names(try await search("CONTAINS_ALL_TOKENS", "garlic FRIES")) == ["t1"])
            #expect(names(try await search("CONTAINS_ANY_TOKENS", "fries franks")) == ["t1", "t2"])
            #expect(names(try await search("CONTAINS_ALL_TOKENS", "garlic")) == ["t1", "t2"])
            #expect(try await search("CONTAINS_ALL_TOKENS", "!!").errorCode == "BAD_REQUEST")
            let unsearchable = try await search("CONTAINS_ALL_TOKENS", "SF", field: "title")
            #expect(unsearchable.json["reason"]?.stringValue?.contains("not marked searchable") == true)
            var invalid = schema
            invalid.recordTypes["Trip"]!.fields["stops"] = FieldSchema(type: .int64, searchable: true)
            #expect(throws: CloudError.self) { try Schema.parse(Array(JSONEncoder().encode(invalid))) }
        }
    }
}
