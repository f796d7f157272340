import CloudCore
import Testing

@Suite struct FieldMergeTests {
    let owners: [String: FieldOwner] = ["canonicalId": .immutable, "name": .system, "capacity": .system, "userNickname": .user, "isFavorite": .user]

    func s(_ text: String) -> FieldValue { FieldValue(type: .string, value: .string(text)) }

    @Test func systemFieldsUpdateUserFieldsStayImmutableFieldsAreRefused() {
        let stored: [String: FieldValue] = [
            "canonicalId": s("stadium_mlb_oracle_park"), "name": s("AT&T Park"), "capacity": FieldValue(type: .int64, value: 41_915),
            "userNickname": s("The Phone Booth"), "isFavorite": FieldValue(type: .int64, value: 1),
        ]
        let incoming: [String: FieldValue] = ["canonicalId": s("stadium_mlb_oracle_park"), "name": s("Oracle Park"), "userNickname": s("ignored")]
        let merge = FieldMerge(stored: stored, incoming: incoming, owners: self.owners)
        #expect(merge.fields["name"] == s("Oracle Park"))
        #expect(merge.fields["capacity"] == nil, "a system field the source dropped is removed")
        #expect(merge.fields["userNickname"] == s("The Phone Booth"))
        #expect(merge.fields["isFavorite"] == FieldValue(type: .int64, value: 1))
        #expect(merge.changed == ["capacity", "name"])
        #expect(merge.refused.isEmpty)

        let moved = FieldMerge(stored: stored, incoming: ["canonicalId": s("stadium_mlb_other")], owners: self.owners)
        #expect(moved.refused == ["canonicalId"])
        #expect(moved.fields["canonicalId"] == s("stadium_mlb_oracle_park"))
    }

    @Test func sameDataIsUnchangedAndNewRecordsTakeEverything() {
        let fields: [String: FieldValue] = ["canonicalId": s("x_y"), "name": s("A")]
        #expect(FieldMerge(stored: fields, incoming: fields, owners: self.owners).isUnchanged)
        let created = FieldMerge(stored: nil, incoming: fields, owners: self.owners)
        #expect(created.fields == fields)
        #expect(created.changed == ["canonicalId", "name"])
    }
}

@Suite struct SchemaTests {
    let schema = Schema(recordTypes: [
        "Visit": RecordTypeSchema(
            database: .private, fields: ["notes": FieldSchema(type: .string, owner: .user), "rating": FieldSchema(type: .int64, owner: .user)])
    ])

    @Test func validatesTypesFieldsAndDatabase() throws {
        try self.schema.validate(recordType: "Visit", fields: ["notes": FieldValue(type: .string, value: "x")], in: .private, path: "r")
        #expect(throws: CloudError.self) { try self.schema.validate(recordType: "Nope", fields: [:], in: .private, path: "r") }
        #expect(throws: CloudError.self) { try self.schema.validate(recordType: "Visit", fields: [:], in: .public, path: "r") }
        #expect(throws: CloudError.self) {
            try self.schema.validate(recordType: "Visit", fields: ["other": FieldValue(type: .string, value: "x")], in: .private, path: "r")
        }
        #expect(throws: CloudError.self) {
            try self.schema.validate(recordType: "Visit", fields: ["rating": FieldValue(type: .string, value: "x")], in: .private, path: "r")
        }
    }

    @Test func additiveChangesApplyDestructiveOnesAreNamed() {
        var newer = self.schema
        newer.recordTypes["Photo"] = RecordTypeSchema(database: .private, fields: [:])
        newer.recordTypes["Visit"]!.fields["seat"] = FieldSchema(type: .string, owner: .user)
        #expect(self.schema.changes(to: newer) == SchemaChanges(additive: ["field Visit.seat", "record type Photo"], destructive: []))
        var destructive = self.schema
        destructive.recordTypes["Visit"]!.fields["rating"] = FieldSchema(type: .string, owner: .user)
        destructive.recordTypes["Visit"]!.fields["notes"] = nil
        #expect(
            self.schema.changes(to: destructive).destructive == [
                "field Visit.notes would be removed", "field Visit.rating would change type from INT64 to STRING",
            ])
    }

    @Test func theSportsTimeSchemaParses() throws {
        let path = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        let bytes = try #require(FileManager.default.contents(atPath: "/" + path + "/Resources/schema.json"))
        let schema = try Schema.parse(Array(bytes))
        #expect(schema.recordTypes["StadiumPreference"]?.fields["userNickname"]?.owner == .user)
        #expect(schema.recordTypes["Stadium"]?.fields["canonicalId"]?.owner == .immutable)
    }
}

import Foundation
