import CloudCore
import Testing

@Suite struct FieldValueTests {
    @Test func infersTypesFromJSONShapeWhenClientsSendNone() throws {
        #expect(try FieldValue.parse(["value": "x"], path: "f")?.type == .string)
        #expect(try FieldValue.parse(["value": 3], path: "f")?.type == .int64)
        #expect(try FieldValue.parse(["value": 3.5], path: "f")?.type == .double)
        #expect(try FieldValue.parse(["value": true], path: "f") == FieldValue(type: .int64, value: 1))
        #expect(try FieldValue.parse(["value": ["recordName": "a"]], path: "f")?.type == .reference)
        #expect(try FieldValue.parse(["value": ["latitude": 1.0, "longitude": 2.0]], path: "f")?.type == .location)
        #expect(try FieldValue.parse(["value": ["a", "b"]], path: "f")?.type == .stringList)
    }

    @Test func existingTypeWinsOverShape() throws {
        let value = try FieldValue.parse(["value": 1700000000000], hint: .timestamp, path: "f")
        #expect(value == FieldValue(type: .timestamp, value: 1700000000000))
        #expect(try FieldValue.parse(["value": []], hint: .stringList, path: "f") == FieldValue(type: .stringList, value: []))
    }

    @Test func nullAndEmptyDictionaryMeanRemove() throws {
        #expect(try FieldValue.parse([:], path: "f") == nil)
        #expect(try FieldValue.parse(["value": .null, "type": "STRING"], path: "f") == nil)
    }

    @Test func assetRequestTagIsStoredAsAssetID() throws {
        let value = try FieldValue.parse(["type": "ASSET", "value": ["fileChecksum": "abc", "size": 3, "receipt": "r"]], path: "f")
        #expect(value?.type == .asset)
        #expect(value?.json["type"] == "ASSETID")
    }

    @Test(
        arguments: [
            (["value": "x", "type": "BOOLEAN"], "unknown field type"),
            (["value": []], "empty list"),
            (["value": "x", "type": "INT64"], "must be an integer"),
            (["value": ["latitude": 91.0, "longitude": 0.0], "type": "LOCATION"], "latitude"),
            (["value": ["action": "NONE"], "type": "REFERENCE"], "recordName is required"),
            (["value": ["recordName": "a", "action": "CASCADE"], "type": "REFERENCE"], "DELETE_SELF"),
            (["value": "not base64!", "type": "BYTES"], "base64"),
            ("just a string", "must be an object"),
        ] as [(JSONValue, String)])
    func rejectsBadValuesWithAClearReason(field: JSONValue, reason: String) {
        #expect {
            try FieldValue.parse(field, path: "fields.f")
        } throws: { error in
            guard let error = error as? CloudError else { return false }
            return error.code == .badRequest && error.reason.contains(reason) && error.reason.contains("fields.f")
        }
    }

    @Test func numbersAsStringsAreAcceptedOnInput() throws {
        #expect(try FieldValue.parse(["value": "42", "type": "INT64"], path: "f") == FieldValue(type: .int64, value: 42))
    }

    @Test func writerEscapesStrings() {
        #expect(JSONWriter.encode(["a\"b": "line\nbreak\u{1}\\"]) == #"{"a\"b":"line\nbreak\u0001\\"}"#)
        #expect(JSONWriter.encode([1, 2.5, .null, true]) == "[1,2.5,null,true]")
    }
}
