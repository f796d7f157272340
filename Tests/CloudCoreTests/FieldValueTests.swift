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

@Suite struct ChangeTokenTests {
    let signer = TokenSigner(key: Array(repeating: UInt8(7), count: 32))

    @Test func roundTrips() throws {
        let token = ChangeToken(kind: .zone, databaseID: 12, zoneID: 34, seq: 56_789, horizon: 60_000)
        #expect(try ChangeToken.decode(token.encode(with: self.signer), kind: .zone, with: self.signer) == token)
    }

    @Test func versionOneTokensAreStillReadWithNoHorizon() throws {
        let payload: [UInt8] = [1, 1] + [Int64(12), 34, 56_789].flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) }
        let token = try ChangeToken.decode(self.signer.sign(payload), kind: .zone, with: self.signer)
        #expect(token == ChangeToken(kind: .zone, databaseID: 12, zoneID: 34, seq: 56_789, horizon: 0))
    }

    @Test func aTokenExpiresOnlyWhenAPurgeAfterItPassedIt() {
        let issuedBeforePurge = ChangeToken(kind: .zone, databaseID: 1, zoneID: 1, seq: 50, horizon: 0)
        let issuedAfterPurge = ChangeToken(kind: .zone, databaseID: 1, zoneID: 1, seq: 50, horizon: 100)
        #expect(issuedBeforePurge.isExpired(purgedSeq: 100))
        #expect(!issuedBeforePurge.isExpired(purgedSeq: 50), "nothing above the token was purged")
        #expect(!issuedAfterPurge.isExpired(purgedSeq: 100), "a first fetch from nothing, paging past the horizon")
        #expect(issuedAfterPurge.isExpired(purgedSeq: 120), "a later purge passed it")
    }

    @Test func alteredOrForeignTokensAreRejected() throws {
        let text = ChangeToken(kind: .zone, databaseID: 1, zoneID: 1, seq: 100).encode(with: self.signer)
        var bytes = Array(text.utf8)
        bytes[10] = bytes[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        for candidate in [String(decoding: bytes, as: UTF8.self), "", "garbage", text + "x"] {
            #expect(throws: CloudError.self) { try ChangeToken.decode(candidate, kind: .zone, with: self.signer) }
        }
        let otherServer = TokenSigner(key: Array(repeating: UInt8(8), count: 32))
        #expect(throws: CloudError.self) { try ChangeToken.decode(text, kind: .zone, with: otherServer) }
        #expect(throws: CloudError.self) { try ChangeToken.decode(text, kind: .database, with: self.signer) }
    }

    @Test func continuationMarkerIsBoundToItsQuery() throws {
        let marker = ContinuationMarker(queryHash: 5, offset: 200).encode(with: self.signer)
        #expect(try ContinuationMarker.decode(marker, queryHash: 5, with: self.signer).offset == 200)
        #expect(throws: CloudError.self) { try ContinuationMarker.decode(marker, queryHash: 6, with: self.signer) }
    }
}

@Suite struct JSONParserTests {
    @Test func parsesEveryKindExactly() throws {
        let value = try JSONValue.parse(Array(#" {"a": [1, -2.5e3, true, false, null, "x\"\u00e9\ud83d\ude00\n"], "big": 9007199254740993} "#.utf8))
        #expect(value["a"] == [1, -2500.0, true, false, .null, "x\"é😀\n"])
        #expect(value["big"] == .int(9_007_199_254_740_993))
    }

    @Test(arguments: [
        "", "{", "1e400", "[1,]", "{\"a\" 1}", "tru", "\"unterminated", "01x", "{\"a\":1} extra", "\"\\q\"",
        String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
    ])
    func rejectsMalformedInput(_ text: String) {
        #expect(throws: CloudError.self) { try JSONValue.parse(Array(text.utf8)) }
    }
}
