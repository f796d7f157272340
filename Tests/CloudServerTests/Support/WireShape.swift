import CloudCore
import Testing

/// The answer shapes CloudKit Web Services documents (`../shared/reference/cloudkit-web-services.md` §3–§5), checked
/// as strictly as the strictest real client decodes them (OpenCloudKit's closed error enum, MistKit's typed fields).
enum WireShape {
    /// The 14 documented `serverErrorCode`s and their HTTP statuses, plus our documented CHANGE_TOKEN_EXPIRED.
    /// THROTTLED is 503 as the live service answers it, not the archived table's 429 (docs/AUTH.md).
    static let errorStatus: [String: Int] = [
        "ACCESS_DENIED": 403, "ATOMIC_ERROR": 400, "AUTHENTICATION_FAILED": 401, "AUTHENTICATION_REQUIRED": 421,
        "BAD_REQUEST": 400, "CONFLICT": 409, "EXISTS": 409, "INTERNAL_ERROR": 500, "NOT_FOUND": 404, "QUOTA_EXCEEDED": 413,
        "THROTTLED": 503, "TRY_AGAIN_LATER": 503, "VALIDATING_REFERENCE_ERROR": 412, "ZONE_NOT_FOUND": 404,
        "CHANGE_TOKEN_EXPIRED": 410,
    ]
    /// The field type tags a response may carry (requests say `ASSET`, responses `ASSETID`).
    static let fieldTypes: Set<String> = [
        "STRING", "INT64", "DOUBLE", "TIMESTAMP", "BYTES", "REFERENCE", "ASSETID", "LOCATION", "STRING_LIST", "INT64_LIST",
        "DOUBLE_LIST", "TIMESTAMP_LIST", "BYTES_LIST", "REFERENCE_LIST", "ASSETID_LIST", "LOCATION_LIST",
    ]

    /// A whole-request error: `serverErrorCode` (documented, with its HTTP status), `reason`, `uuid`.
    static func expectError(_ reply: TestServer.Reply, _ code: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.errorCode == code, "\(reply.json)", sourceLocation: sourceLocation)
        #expect(reply.status == errorStatus[code], "\(code) answers HTTP \(errorStatus[code] ?? 0)", sourceLocation: sourceLocation)
        #expect(reply.json["reason"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(reply.json["uuid"]?.stringValue != nil, sourceLocation: sourceLocation)
    }

    /// A per-item error inside a 200 (or atomic 400) answer: `serverErrorCode`, `reason` and the item's key.
    static func expectItemError(
        _ item: JSONValue?, _ code: String, key: String = "recordName", name: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(item?["serverErrorCode"]?.stringValue == code, "\(item ?? .null)", sourceLocation: sourceLocation)
        #expect(item?["reason"]?.stringValue?.isEmpty == false, sourceLocation: sourceLocation)
        if key == "zoneID" {
            #expect(item?["zoneID"]?["zoneName"]?.stringValue == name ?? item?["zoneID"]?["zoneName"]?.stringValue, sourceLocation: sourceLocation)
        } else {
            #expect(item?[key]?.stringValue == name ?? item?[key]?.stringValue, sourceLocation: sourceLocation)
            #expect(item?[key]?.stringValue != nil, sourceLocation: sourceLocation)
        }
    }

    /// A record dictionary: system keys with their JSON kinds, stamps, and every field tagged with a response type.
    static func expectRecord(_ record: JSONValue?, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let record, record["serverErrorCode"] == nil else {
            Issue.record("expected a record, got \(record ?? .null)", sourceLocation: sourceLocation)
            return
        }
        for key in ["recordName", "recordType", "recordChangeTag"] {
            #expect(record[key]?.stringValue != nil, "\(key) in \(record)", sourceLocation: sourceLocation)
        }
        #expect(record["deleted"]?.boolValue == false, sourceLocation: sourceLocation)
        for stamp in ["created", "modified"] {
            #expect(record[stamp]?["timestamp"]?.int64Value != nil, "\(stamp).timestamp in ms", sourceLocation: sourceLocation)
            #expect(record[stamp]?["userRecordName"]?.stringValue != nil, sourceLocation: sourceLocation)
            #expect(record[stamp]?["deviceID"]?.stringValue != nil, sourceLocation: sourceLocation)
        }
        #expect(record["zoneID"]?["zoneName"]?.stringValue != nil, sourceLocation: sourceLocation)
        guard let fields = record["fields"]?.objectValue else {
            Issue.record("fields must be an object in \(record)", sourceLocation: sourceLocation)
            return
        }
        for (name, field) in fields {
            let type = field["type"]?.stringValue ?? ""
            #expect(fieldTypes.contains(type), "field \(name) has type \(type)", sourceLocation: sourceLocation)
            #expect(field["value"] != nil, "field \(name) has a value", sourceLocation: sourceLocation)
        }
    }

    /// A zone dictionary: `zoneID` {zoneName, ownerRecordName}, `syncToken`, `atomic`.
    static func expectZone(_ zone: JSONValue?, _ name: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(zone?["zoneID"]?["zoneName"]?.stringValue == name, "\(zone ?? .null)", sourceLocation: sourceLocation)
        #expect(zone?["zoneID"]?["ownerRecordName"]?.stringValue != nil, sourceLocation: sourceLocation)
        #expect(zone?["syncToken"]?.stringValue != nil, sourceLocation: sourceLocation)
        #expect(zone?["atomic"]?.boolValue == (name != "_defaultZone"), sourceLocation: sourceLocation)
    }
}
