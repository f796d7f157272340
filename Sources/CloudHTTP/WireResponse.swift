import CloudCore
import CloudPostgres
import Hummingbird

/// Writes CloudKit Web Services response dictionaries.
struct WireWriter {
    var json = JSONWriter(capacity: 4096)
    /// `numbersAsStrings`: INT64, DOUBLE and TIMESTAMP field values are answered as strings.
    var numbersAsStrings = false
    var status: HTTPResponse.Status = .ok
    /// Makes the signed download URL of an asset (by checksum); asset fields are answered as ASSETID with it.
    var downloadURL: (@Sendable (String) -> String)?

    /// `{"zoneName", "ownerRecordName", "zoneType"}`.
    mutating func zoneID(_ zoneName: String, owner: String) {
        self.json.beginObject()
        self.json.key("zoneName"); self.json.string(zoneName)
        self.json.key("ownerRecordName"); self.json.string(owner)
        self.json.key("zoneType"); self.json.string(zoneName == defaultZoneName ? "DEFAULT_ZONE" : "REGULAR_CUSTOM_ZONE")
        self.json.endObject()
    }

    mutating func stamp(_ stamp: ChangeStamp) {
        self.json.beginObject()
        self.json.key("timestamp"); self.json.int(stamp.timestamp)
        self.json.key("userRecordName"); self.json.string(stamp.userRecordName)
        self.json.key("deviceID"); self.json.string(stamp.deviceID)
        self.json.endObject()
    }

    /// A record dictionary, or a tombstone `{recordName, recordType, deleted: true}`.
    mutating func record(_ record: RecordSnapshot, zoneName: String, owner: String) {
        self.json.beginObject()
        self.json.key("recordName"); self.json.string(record.recordName)
        self.json.key("recordType"); self.json.string(record.recordType)
        if record.deleted {
            self.json.key("deleted"); self.json.bool(true)
        } else {
            self.json.key("recordChangeTag"); self.json.string(record.changeTag)
            self.json.key("fields")
            let hasAssets = self.downloadURL != nil && Self.mentionsAsset(record.fieldsJSON)
            if self.numbersAsStrings || hasAssets, var fields = try? JSONValue.parse(Array(record.fieldsJSON.utf8)) {
                if self.numbersAsStrings { fields = Self.stringifyingNumbers(fields) }
                if hasAssets, let downloadURL = self.downloadURL { fields = Self.addingDownloadURLs(fields, downloadURL) }
                self.json.value(fields)
            } else {
                self.json.raw(record.fieldsJSON)
            }
            self.json.key("created"); self.stamp(record.created)
            self.json.key("modified"); self.stamp(record.modified)
            self.json.key("deleted"); self.json.bool(false)
            self.json.key("pluginFields"); self.json.beginObject(); self.json.endObject()
        }
        self.json.key("zoneID"); self.zoneID(zoneName, owner: owner)
        self.json.endObject()
    }

    /// A per-item error dictionary; `serverRecord` is our CONFLICT/EXISTS extension.
    mutating func itemError(_ error: CloudError, key: String, name: String, serverRecord: RecordSnapshot? = nil, zone: (String, String)? = nil) {
        self.json.beginObject()
        self.json.key(key)
        if key == "zoneID", let zone { self.zoneID(zone.0, owner: zone.1) } else { self.json.string(name) }
        self.json.key("serverErrorCode"); self.json.string(error.code.rawValue)
        self.json.key("reason"); self.json.string(error.reason)
        if let retryAfter = error.retryAfter { self.json.key("retryAfter"); self.json.int(Int64(retryAfter)) }
        if let serverRecord, let zone {
            self.json.key("serverRecord"); self.record(serverRecord, zoneName: zone.0, owner: zone.1)
        }
        self.json.endObject()
    }

    /// Whether stored field JSON has an ASSETID value: a byte scan on every record answered, so it must be cheap
    /// (Foundation's `String.contains` cost pulls about a third of their speed).
    static func mentionsAsset(_ fields: String) -> Bool {
        var fields = fields
        return fields.withUTF8 { bytes in
            let needle = Array("ASSETID".utf8)
            guard bytes.count >= needle.count else { return false }
            for index in 0...(bytes.count - needle.count) where bytes[index] == 65 {
                var offset = 1
                while offset < needle.count, bytes[index + offset] == needle[offset] { offset += 1 }
                if offset == needle.count { return true }
            }
            return false
        }
    }

    /// ASSETID values with their `downloadURL`.
    static func addingDownloadURLs(_ fields: JSONValue, _ downloadURL: (String) -> String) -> JSONValue {
        guard case .object(let object) = fields else { return fields }
        func withURL(_ asset: JSONValue) -> JSONValue {
            guard case .object(var dictionary) = asset, let checksum = dictionary["fileChecksum"]?.stringValue else { return asset }
            dictionary["downloadURL"] = .string(downloadURL(checksum))
            return .object(dictionary)
        }
        return .object(object.mapValues { stored in
            guard let field = FieldValue(stored: stored) else { return stored }
            switch field.type {
            case .asset: return FieldValue(type: .asset, value: withURL(field.value)).json
            case .assetList: return FieldValue(type: .assetList, value: .array((field.value.arrayValue ?? []).map(withURL))).json
            default: return stored
            }
        })
    }

    /// Field values of numeric types as strings, for `numbersAsStrings`.
    static func stringifyingNumbers(_ fields: JSONValue) -> JSONValue {
        guard case .object(let object) = fields else { return fields }
        return .object(object.mapValues { stored in
            guard let field = FieldValue(stored: stored), field.type.isNumeric || (field.type.elementType?.isNumeric ?? false) else {
                return stored
            }
            func text(_ value: JSONValue) -> JSONValue {
                switch value {
                case .int(let number): .string(String(number))
                case .double(let number): .string("\(number)")
                case .array(let items): .array(items.map(text))
                default: value
                }
            }
            return FieldValue(type: field.type, value: text(field.value)).json
        })
    }

    func response() -> Response {
        Response(
            status: self.status, headers: [.contentType: "application/json; charset=UTF-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.json.bytes)))
    }
}
