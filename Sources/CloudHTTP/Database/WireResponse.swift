import CloudCore
import Foundation
import Hummingbird

/// Writes CloudKit Web Services response dictionaries.
struct WireWriter {
    var json = JSONWriter(capacity: 4096)
    /// `numbersAsStrings`: INT64, DOUBLE and TIMESTAMP field values are answered as strings.
    var numbersAsStrings = false
    var status: HTTPResponse.Status = .ok
    /// Makes the signed download URL of an asset (by checksum); asset fields are answered as ASSETID with it.
    var downloadURL: (@Sendable (String) -> String)?
    /// Record types this caller may not read (`read: authenticated`, asked without signing in): left out of deltas.
    var unreadableTypes: Set<String> = []

    /// Writes `{`, lets `members` write, writes `}`; `members` can use every helper of this writer.
    mutating func object(_ members: (inout WireWriter) throws -> Void) rethrows {
        try JSONWriter.object(in: &self, at: \.json, members)
    }

    /// Writes `[`, lets `items` write, writes `]`.
    mutating func array(_ items: (inout WireWriter) throws -> Void) rethrows {
        try JSONWriter.array(in: &self, at: \.json, items)
    }

    /// `"key": [items]`, the shape of every list a CloudKit answer holds.
    mutating func list(_ key: String, _ items: (inout WireWriter) throws -> Void) rethrows {
        self.json.key(key)
        try self.array(items)
    }

    /// `{"zoneName", "ownerRecordName", "zoneType"}`.
    mutating func zoneID(_ zoneName: String, owner: String) {
        // Every record of a page names the same zone: written once, then copied.
        if let last = self.lastZoneID, last.zoneName == zoneName, last.owner == owner {
            self.json.raw(last.json)
            return
        }
        var json = JSONWriter(capacity: 96)
        json.object { json in
            json.key("zoneName"); json.string(zoneName)
            json.key("ownerRecordName"); json.string(owner)
            json.key("zoneType"); json.string(zoneName == defaultZoneName ? "DEFAULT_ZONE" : "REGULAR_CUSTOM_ZONE")
        }
        self.json.raw(json.bytes)
        self.lastZoneID = (zoneName, owner, json.bytes)
    }

    private var lastZoneID: (zoneName: String, owner: String, json: [UInt8])?

    mutating func stamp(_ stamp: ChangeStamp) {
        self.object { writer in
            writer.json.key(known: "timestamp"); writer.json.int(stamp.timestamp)
            writer.author(of: stamp)
        }
    }

    /// A stamp's `"userRecordName": …, "deviceID": …`. A page's records were mostly written by one user from a few
    /// devices: written once, then copied while they repeat.
    private mutating func author(of stamp: ChangeStamp) {
        if let last = self.lastAuthor, last.user == stamp.userRecordName, last.device == stamp.deviceID {
            self.json.raw(last.json)
            return
        }
        var json = JSONWriter(capacity: 96)
        json.key(known: "userRecordName"); json.string(stamp.userRecordName)
        json.key(known: "deviceID"); json.string(stamp.deviceID)
        self.json.raw(json.bytes)
        self.lastAuthor = (stamp.userRecordName, stamp.deviceID, json.bytes)
    }

    private var lastAuthor: (user: String, device: String, json: [UInt8])?

    /// A record dictionary, or a tombstone `{recordName, recordType, deleted: true}`.
    mutating func record(_ record: RecordSnapshot, zoneName: String, owner: String) {
        // A tombstone is written from its name and type, never from an answer: a record answered as gone (a type the
        // caller may not read) is a live one marked deleted, whose answer holds its fields.
        if let answer = record.storedAnswer, !record.deleted {
            return self.record(answer, changeSeq: record.changeSeq, zoneName: zoneName, owner: owner)
        }
        self.object { writer in
            writer.json.key(known: "recordName"); writer.json.string(record.recordName)
            writer.json.key(known: "recordType"); writer.json.string(record.recordType)
            if record.deleted {
                writer.json.key(known: "deleted"); writer.json.bool(true)
            } else {
                writer.json.key(known: "recordChangeTag"); writer.json.string(digitsOf: record.changeSeq, radix: ChangeTag.radix)
                writer.json.key(known: "fields"); writer.fields(record.fieldsJSON)
                writer.json.key(known: "created"); writer.stamp(record.created)
                writer.json.key(known: "modified"); writer.stamp(record.modified)
                writer.json.key(known: "deleted"); writer.json.bool(false)
                writer.json.key(known: "pluginFields"); writer.json.object { _ in }
            }
            writer.json.key(known: "zoneID"); writer.zoneID(zoneName, owner: owner)
        }
    }

    /// A record from its stored answer (`RecordSnapshot.storedAnswer`): copied, its change tag and zone written after
    /// it; parsed and written again only when its fields change on the way out.
    private mutating func record(_ answer: String, changeSeq: Int64, zoneName: String, owner: String) {
        self.object { writer in
            if writer.rewrites(answer), var members = try? JSONValue.parse(Array("{\(answer)}".utf8)).objectValue {
                members["fields"] = members["fields"].map(writer.rewritten)
                for (key, value) in members.sorted(by: { $0.key < $1.key }) {
                    writer.json.key(key); writer.json.value(value)
                }
            } else {
                writer.json.raw(answer)
            }
            writer.json.key(known: "recordChangeTag"); writer.json.string(digitsOf: changeSeq, radix: ChangeTag.radix)
            writer.json.key(known: "zoneID"); writer.zoneID(zoneName, owner: owner)
        }
    }

    /// Stored field JSON, spliced in as it is unless it changes on the way out.
    private mutating func fields(_ stored: String) {
        if self.rewrites(stored), let fields = try? JSONValue.parse(Array(stored.utf8)) {
            self.json.value(self.rewritten(fields))
        } else {
            self.json.raw(stored)
        }
    }

    /// Whether stored JSON holding fields changes on the way out: numbers become strings, or assets get their
    /// download URLs.
    private func rewrites(_ stored: String) -> Bool {
        self.numbersAsStrings || (self.downloadURL != nil && Self.mentionsAsset(stored))
    }

    /// Fields as this answer writes them.
    private func rewritten(_ fields: JSONValue) -> JSONValue {
        var fields = fields
        if self.numbersAsStrings { fields = Self.stringifyingNumbers(fields) }
        if let downloadURL = self.downloadURL { fields = Self.addingDownloadURLs(fields, downloadURL) }
        return fields
    }

    /// `{"recordName": name, "deleted": true}` or the zone form: what a deletion answers.
    mutating func deleted(_ key: String, name: String, owner: String? = nil) {
        self.object { writer in
            writer.json.key(key)
            if let owner { writer.zoneID(name, owner: owner) } else { writer.json.string(name) }
            writer.json.key("deleted"); writer.json.bool(true)
        }
    }

    /// A per-item error dictionary; `serverRecord` is our CONFLICT/EXISTS extension.
    mutating func itemError(_ error: CloudError, key: String, name: String, serverRecord: RecordSnapshot? = nil, zone: (String, String)? = nil) {
        self.object { writer in
            writer.json.key(key)
            if key == "zoneID", let zone { writer.zoneID(zone.0, owner: zone.1) } else { writer.json.string(name) }
            writer.json.key("serverErrorCode"); writer.json.string(error.code.rawValue)
            writer.json.key("reason"); writer.json.string(error.reason)
            if let retryAfter = error.retryAfter { writer.json.key("retryAfter"); writer.json.int(Int64(retryAfter)) }
            if let serverRecord, let zone {
                writer.json.key("serverRecord"); writer.record(serverRecord, zoneName: zone.0, owner: zone.1)
            }
        }
    }

    /// Whether stored field JSON has an ASSETID value: a scan of every record answered, so by `memchr` (vectorised)
    /// to each "A" and `memcmp` there.
    static func mentionsAsset(_ fields: String) -> Bool {
        var fields = fields
        return fields.withUTF8 { bytes in
            guard var start = bytes.baseAddress.map(UnsafeRawPointer.init) else { return false }
            let end = start + bytes.count
            let needle: StaticString = "ASSETID"
            while end - start >= needle.utf8CodeUnitCount, let hit = memchr(start, 65, end - start - needle.utf8CodeUnitCount + 1) {
                if memcmp(hit, needle.utf8Start, needle.utf8CodeUnitCount) == 0 { return true }
                start = UnsafeRawPointer(hit) + 1
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
        return .object(
            object.mapValues { stored in
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
        return .object(
            object.mapValues { stored in
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
