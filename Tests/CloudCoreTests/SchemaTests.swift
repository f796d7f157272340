import CloudCore
import Testing
import Foundation

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
