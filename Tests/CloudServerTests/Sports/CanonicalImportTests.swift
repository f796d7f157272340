@testable import Canon
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import Testing

@Suite(.bounded) struct CanonicalImportTests {
    @Test func importIsIdempotentAndChangesReachDevicesAsDeltas() async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            let importer = server.importer
            let container = "iCloud.com.sportstime.test"
            var dataset = try CanonicalFixtures.dataset.get()
            // A source that knows no history for Oracle Park: the rename below must produce its alias.
            dataset.stadiumAliases.removeAll { $0.stadiumId == "stadium_mlb_oracle_park" }
            let first = try await importer.run(dataset, container: container, environment: "development", dryRun: false)
            #expect(first.changes.count == (try dataset.records().count))

            // Same data again: nothing written, the token does not move.
            let token = try await server.publicToken()
            let again = try await importer.run(dataset, container: container, environment: "development", dryRun: false)
            #expect(again.changes.isEmpty)
            #expect(try await server.publicToken() == token)

            // A rename without an alias in the source, and a team that disappears.
            let oracle = dataset.stadiums.firstIndex { $0.id == "stadium_mlb_oracle_park" }!
            dataset.stadiums[oracle].name = "Bay Ballpark"
            dataset.teamVenues.removeAll { $0.teamId == "team_nfl_jets" }
            dataset.teamAliases.removeAll { $0.teamId == "team_nfl_jets" }
            dataset.teams.removeAll { $0.id == "team_nfl_jets" }
            let dry = try await importer.run(dataset, container: container, environment: "development", dryRun: true)
            #expect(try await server.publicToken() == token, "a dry run writes nothing")
            let second = try await importer.run(dataset, container: container, environment: "development", dryRun: false)
            #expect(second.report == dry.report)
            #expect(second.changes.contains(.updated("stadium_mlb_oracle_park", type: "Stadium", fields: ["name"])))
            #expect(second.changes.contains(.deprecated("team_nfl_jets", type: "Team")))
            #expect(second.changes.contains { if case .aliasAdded(_, "stadium_mlb_oracle_park", "Oracle Park") = $0 { true } else { false } })

            let delta = try await server.call(
                "records/changes", ["zoneID": ["zoneName": "_defaultZone"], "syncToken": .string(token)], database: "public")
            let byName = Dictionary(uniqueKeysWithValues: delta.records.map { ($0["recordName"]!.stringValue!, $0) })
            #expect(byName["stadium_mlb_oracle_park"]?["fields"]?["name"]?["value"] == "Bay Ballpark")
            #expect(byName["team_nfl_jets"]?["deleted"] == false, "deprecated, never deleted")
            #expect(byName["team_nfl_jets"]?["fields"]?["deprecatedAt"]?["type"] == "TIMESTAMP")
            let alias = try #require(byName.values.first { $0["recordType"] == "StadiumAlias" && $0["fields"]?["name"]?["value"] == "Oracle Park" })
            #expect(alias["fields"]?["validUntil"] != nil)

            // The added alias survives the next import of the same source.
            #expect(try await importer.run(dataset, container: container, environment: "development", dryRun: false).changes.isEmpty)
        }
    }

    @Test func mergeKeepsUserFieldsAndRefusesImmutableChanges() throws {
        var schema = try CanonicalFixtures.schema.get()
        schema.recordTypes["Stadium"]!.fields["userNickname"] = FieldSchema(type: .string, owner: .user)
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_", deviceID: "")
        let source = [
            RecordDraft(
                recordName: "stadium_mlb_oracle_park", recordType: "Stadium",
                fields: [
                    "canonicalId": FieldValue(type: .string, value: "stadium_mlb_oracle_park"),
                    "name": FieldValue(type: .string, value: "Oracle Park"),
                ])
        ]
        let stored = Record(
            recordName: "stadium_mlb_oracle_park", recordType: "Stadium", changeSeq: 1,
            fields: [
                "canonicalId": FieldValue(type: .string, value: "stadium_mlb_oracle_park"), "name": FieldValue(type: .string, value: "AT&T Park"),
                "userNickname": FieldValue(type: .string, value: "Phone Booth"),
            ], created: stamp, modified: stamp)
        let plan = try CanonicalImportPlan(source: source, stored: [stored.recordName: stored], schema: schema, now: 5)
        let updated = try #require(plan.drafts.first { $0.recordName == "stadium_mlb_oracle_park" })
        #expect(updated.fields["userNickname"]?.value == "Phone Booth")
        #expect(updated.fields["name"]?.value == "Oracle Park")
        #expect(plan.drafts.contains { $0.recordType == "StadiumAlias" && $0.fields["name"]?.value == "AT&T Park" })

        var moved = stored
        moved.fields["canonicalId"] = FieldValue(type: .string, value: "stadium_mlb_somewhere_else")
        #expect { try CanonicalImportPlan(source: source, stored: [moved.recordName: moved], schema: schema, now: 5) } throws: {
            "\($0)".contains("immutable")
        }
    }

    /// With just-in-time schema off (`serve --no-just-in-time-schema`), development is as strict as production.
    @Test func deployedSchemaChecksWritesAndTypesUntypedValues() async throws {
        try await TestServer.run(configure: { $0.justInTimeSchema = false }) { server in
            let records = server.dependencies.records
            try await records.applySchema(try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            let unknownType = try await server.modify([Op.create("x", type: "Nope")])
            #expect(unknownType.anyErrorCode == "BAD_REQUEST")
            let unknownField = try await server.modify([Op.create("v", type: "StadiumVisit", ["mood": "happy"])])
            #expect(unknownField.anyError?["reason"]?.stringValue?.contains("mood") == true)
            let wrongType = try await server.modify([Op.create("v", type: "StadiumVisit", ["notes": 5])])
            #expect(wrongType.anyErrorCode == "BAD_REQUEST")
            let publicTypeInPrivate = try await server.modify([Op.create("s", type: "Stadium")])
            #expect(publicTypeInPrivate.anyErrorCode == "BAD_REQUEST")
            // MistKit sends no types: the schema supplies them.
            let typed = try await server.modify([
                Op.create("v", type: "StadiumVisit", ["visitDate": 1_700_000_000_000, "stadium": ["recordName": "stadium_mlb_oracle_park"]])
            ])
            #expect(typed.records.first?["fields"]?["visitDate"]?["type"] == "TIMESTAMP")

            var destructive = try CanonicalFixtures.schema.get()
            destructive.recordTypes["StadiumVisit"]!.fields["notes"] = nil
            await #expect { try await records.applySchema(destructive, to: TestServer.development, logger: TestDatabase.logger) } throws: {
                ($0 as? CloudError)?.reason.contains("field StadiumVisit.notes would be removed") == true
            }
            var additive = try CanonicalFixtures.schema.get()
            additive.recordTypes["StadiumVisit"]!.fields["weather"] = FieldSchema(type: .string, owner: .user, queryable: true)
            #expect(
                try await records.applySchema(additive, to: TestServer.development, logger: TestDatabase.logger).additive == [
                    "field StadiumVisit.weather"
                ])
            #expect(try await server.modify([Op.create("w", type: "StadiumVisit", ["weather": "sunny"])]).status == 200)
        }
    }
}

extension CanonicalImportTests {
    /// Every canonical request, and every visit saved, is checked against the canonical catalog (36,992 records, about
    /// 3 s to build in a release server). A vote in a trip poll, in an unlisted zone of the public database, does not
    /// rebuild it; a change to a listed zone does.
    @Test func onlyAChangeToAListedZoneRebuildsTheCatalog() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let logger = TestDatabase.logger
            let endpoints = CanonicalEndpoints(records: store)
            let database = try await store.database(container: "c", environment: "development", scope: .public, owner: nil, logger: logger)
            let poll = UnlistedZone.prefix + "Q2FyMHNUcmlwMjAyNw"
            _ = try await store.modifyZones([.create(poll)], in: database, logger: logger)
            @Sendable func write(_ name: String, in zone: String) async throws {
                let stamp = ChangeStamp(timestamp: 1, userRecordName: "_w", deviceID: "d")
                let result = try await store.modify(
                    [RecordOperation(type: .forceUpdate, recordName: name, recordType: "Note", fields: ["n": ["value": .int(1)]])],
                    zoneName: zone, atomic: nil, in: database, stamp: stamp, logger: logger)
                #expect(result.outcomes.allSatisfy { !$0.isFailure })
            }
            _ = try await endpoints.catalog(for: database, logger: logger)
            #expect(endpoints.catalogsBuilt == 1)
            try await write("vote", in: poll)
            _ = try await endpoints.catalog(for: database, logger: logger)
            #expect(endpoints.catalogsBuilt == 1)
            try await write("venue", in: defaultZoneName)
            _ = try await endpoints.catalog(for: database, logger: logger)
            #expect(endpoints.catalogsBuilt == 2)
        }
    }
}
