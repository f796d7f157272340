import CloudCore
import Foundation
import GRDB

/// A `records/modify` batch as first sent: retried with the same key and the same bytes until an answer arrives,
/// so the server applies it once (`Idempotency-Key`).
struct OutboxBatch: Sendable {
    var zone: String
    var idempotencyKey: String
    var body: Data
    /// The queued edits it carries, in operation order, with the `seq` each had when sent.
    var entries: [(recordName: String, seq: Int64)]
}

/// What applying a batch's answer did.
struct PushOutcome: Sendable {
    var saved = 0
    var deleted = 0
    var merged = 0
    var dropped = 0
    var refused: [(recordName: String, error: String)] = []
    /// CONFLICT or EXISTS answers without the server record (a plain CloudKit server): look them up and merge.
    var needLookup: [String] = []
}

extension LocalStore {
    static let databaseTokenZone = ""

    // MARK: tokens

    func token(scope: DatabaseScope, zone: String) throws -> String? {
        try self.database.read { db in
            try db.value(String.self, "SELECT token FROM tokens WHERE scope = ? AND zone = ?", [scope.rawValue, zone])
        }
    }

    func setDatabaseToken(_ token: String?, scope: DatabaseScope) throws {
        try self.database.write { db in try Self.setToken(db, token, scope: scope, zone: Self.databaseTokenZone) }
    }

    static func setToken(_ db: Database, _ token: String?, scope: DatabaseScope, zone: String) throws {
        if let token {
            try db.run(
                "INSERT INTO tokens (scope, zone, token) VALUES (?, ?, ?) ON CONFLICT (scope, zone) DO UPDATE SET token = excluded.token",
                [scope.rawValue, zone, token])
        } else {
            try db.run("DELETE FROM tokens WHERE scope = ? AND zone = ?", [scope.rawValue, zone])
        }
    }

    /// The private zones the device has a token for.
    func knownZones(scope: DatabaseScope) throws -> [String] {
        try self.database.read { db in
            try db.values(String.self, "SELECT zone FROM tokens WHERE scope = ? AND zone <> '' ORDER BY zone", [scope.rawValue])
        }
    }

    // MARK: fetched changes

    /// Applies one page of a zone's changes and saves the token that covers it, in one transaction. On the last
    /// page (`moreComing` false) of a zone being refetched, records the refetch did not bring back are gone.
    func applyPage(scope: DatabaseScope, zone: String, records: [JSONValue], token: String, moreComing: Bool) throws -> (changed: Int, deleted: Int) {
        try self.database.write { db in
            var changed = 0
            var deleted = 0
            var inserted = false
            for record in records {
                switch try self.applyServerRecord(db, scope: scope, zone: zone, record) {
                case .inserted: changed += 1; inserted = true
                case .updated: changed += 1
                case .deleted: deleted += 1
                case .ignored: break
                }
            }
            if !moreComing { deleted += try self.removeStale(db, scope: scope, zone: zone) }
            if inserted && scope == .public { try self.reprojectAll(db) }
            try Self.setToken(db, token, scope: scope, zone: zone)
            return (changed, deleted)
        }
    }

    /// Forgets a zone's token after CHANGE_TOKEN_EXPIRED: its records are marked stale, the refetch from the start
    /// unmarks those that still exist, and the last page removes the rest (deletions the server has purged).
    /// Forgets everything of the signed-in person: their records, queued edits and uploads, their zones' tokens and
    /// the session (after their account was erased). Public data stays, for whoever signs in next.
    public func forgetPerson() throws {
        try self.database.write { db in
            try db.execute(
                sql: """
                    DELETE FROM records WHERE scope = 'private'; DELETE FROM tokens WHERE scope = 'private';
                    DELETE FROM pending; DELETE FROM outbox; DELETE FROM uploads;
                    DELETE FROM settings WHERE key IN ('webAuthToken', 'userRecordName');
                    """)
        }
    }

    func resetZone(scope: DatabaseScope, zone: String) throws {
        try self.database.write { db in
            try db.run("UPDATE records SET stale = 1 WHERE scope = ? AND zone = ?", [scope.rawValue, zone])
            try Self.setToken(db, nil, scope: scope, zone: zone)
        }
    }

    /// Removes a zone the server deleted (or no longer has), with its queued edits.
    func dropZone(scope: DatabaseScope, zone: String) throws {
        try self.database.write { db in
            try db.run("UPDATE records SET stale = 1 WHERE scope = ? AND zone = ?", [scope.rawValue, zone])
            if scope == .private { try db.run("DELETE FROM pending WHERE zone = ?", [zone]) }
            _ = try self.removeStale(db, scope: scope, zone: zone)
            try Self.setToken(db, nil, scope: scope, zone: zone)
        }
    }

    func removeStale(_ db: Database, scope: DatabaseScope, zone: String) throws -> Int {
        let stale = try db.rows(
            """
            SELECT * FROM records r WHERE scope = ? AND zone = ? AND stale = 1
            AND NOT EXISTS (SELECT 1 FROM pending p WHERE r.scope = 'private' AND p.zone = r.zone AND p.recordName = r.recordName)
            """,
            [scope.rawValue, zone]
        ).map(Self.record(from:))
        for record in stale {
            try db.run("DELETE FROM records WHERE scope = ? AND zone = ? AND recordName = ?", [scope.rawValue, zone, record.recordName])
            try self.project(db, old: record, new: nil)
        }
        // What is left stale has an edit queued, but the server no longer has the record (a restore lost it, or its
        // deletion was purged): the edit goes as a new record, so it is not lost.
        try db.run("UPDATE records SET stale = 0, changeTag = NULL WHERE scope = ? AND zone = ? AND stale = 1", [scope.rawValue, zone])
        return stale.count
    }

    enum Applied { case inserted, updated, deleted, ignored }

    /// Takes in one record (or tombstone) from the server. Public records go through `FieldMerge`: system fields
    /// take the server's values, user fields (projected ones included) stay. A private record with a queued edit
    /// keeps the device's values for the fields it edited and takes the server's version (tag) for the rest, so
    /// the next push updates on top of the server's latest state; a tombstone wins over a queued edit.
    func applyServerRecord(_ db: Database, scope: DatabaseScope, zone: String, _ json: JSONValue) throws -> Applied {
        guard let name = json["recordName"]?.stringValue else { return .ignored }
        let old = try Self.fetchRecord(db, scope: scope, zone: zone, name: name, includingDeleted: true)
        if json["deleted"]?.boolValue == true {
            guard let old else { return .ignored }
            try db.run("DELETE FROM records WHERE scope = ? AND zone = ? AND recordName = ?", [scope.rawValue, zone, name])
            if scope == .private { try db.run("DELETE FROM pending WHERE zone = ? AND recordName = ?", [zone, name]) }
            try self.project(db, old: old, new: nil)
            return .deleted
        }
        guard let type = json["recordType"]?.stringValue, let tag = json["recordChangeTag"]?.stringValue else { return .ignored }
        let pending = scope == .private ? try db.row("SELECT kind, changedFields FROM pending WHERE zone = ? AND recordName = ?", [zone, name]) : nil
        // The device's own write coming back, or a page fetched twice: nothing to do.
        if let old, old.changeTag == tag, pending == nil {
            try db.run("UPDATE records SET stale = 0 WHERE scope = ? AND zone = ? AND recordName = ? AND stale = 1", [scope.rawValue, zone, name])
            return .ignored
        }
        let incoming = (json["fields"]?.objectValue ?? [:]).compactMapValues(FieldValue.init(stored:))
        var record = LocalRecord(scope: scope, zone: zone, recordName: name, recordType: type, changeTag: tag, fields: incoming)
        switch scope {
        case .public:
            record.fields = FieldMerge(stored: old?.fields, incoming: incoming, owners: self.publicOwners).fields
            try Self.write(db, record)
        case .private:
            if let pending, (pending["kind"] as String) == "delete" {
                try db.run("UPDATE records SET changeTag = ? WHERE scope = 'private' AND zone = ? AND recordName = ?", [tag, zone, name])
                return .updated
            }
            for field in Self.names(pending?["changedFields"]) { record.fields[field] = old?.fields[field] }
            try Self.write(db, record)
            try self.project(db, old: old, new: record)
        }
        return old == nil ? .inserted : .updated
    }

    /// Server records looked up after a CONFLICT without `serverRecord`.
    /// Takes the download URLs of records read again because a URL was refused (expired, or signed before a
    /// restore): the record itself is often unchanged (same tag), and applying it would keep the old URL. Only an
    /// asset field holding the same bytes (same checksum) takes the new URL.
    func renewDownloadURLs(from serverRecords: [JSONValue], zone: String) throws {
        try self.database.write { db in
            for json in serverRecords {
                guard let name = json["recordName"]?.stringValue, var record = try Self.fetchRecord(db, scope: .private, zone: zone, name: name)
                else { continue }
                var renewed = false
                for (field, wire) in json["fields"]?.objectValue ?? [:] {
                    guard let fresh = FieldValue(stored: wire), fresh.type == .asset, let local = record.fields[field], local.type == .asset,
                        local.value["fileChecksum"] == fresh.value["fileChecksum"], local != fresh
                    else { continue }
                    record.fields[field] = fresh
                    renewed = true
                }
                if renewed { try Self.write(db, record) }
            }
        }
    }

    func merge(serverRecords: [JSONValue], zone: String) throws {
        try self.database.write { db in
            for record in serverRecords where record["serverErrorCode"] == nil {
                _ = try self.applyServerRecord(db, scope: .private, zone: zone, record)
            }
        }
    }

    // MARK: pushing

    /// The batch in flight, or a new one of at most `limit` queued edits of one zone, saved before it is sent.
    func nextBatch(limit: Int) throws -> OutboxBatch? {
        try self.database.write { db in
            if let row = try db.row("SELECT * FROM outbox WHERE id = 1") {
                let entries = (try JSONValue.parse(Array((row["entries"] as String).utf8)).arrayValue ?? []).compactMap {
                    entry -> (recordName: String, seq: Int64)? in
                    guard let name = entry["recordName"]?.stringValue, let seq = entry["seq"]?.int64Value else { return nil }
                    return (name, seq)
                }
                return OutboxBatch(zone: row["zone"], idempotencyKey: row["idempotencyKey"], body: row["body"], entries: entries)
            }
            // A record deleted before the server ever had it needs no request.
            try db.execute(
                sql: """
                    DELETE FROM records WHERE scope = 'private' AND deleted = 1 AND changeTag IS NULL;
                    DELETE FROM pending WHERE kind = 'delete' AND NOT EXISTS (
                        SELECT 1 FROM records r WHERE r.scope = 'private' AND r.zone = pending.zone AND r.recordName = pending.recordName);
                    """)
            guard let zone = try db.value(String.self, "SELECT zone FROM pending WHERE lastError IS NULL ORDER BY seq LIMIT 1") else { return nil }
            let rows = try db.rows(
                "SELECT seq, recordName, kind, changedFields FROM pending WHERE zone = ? AND lastError IS NULL ORDER BY seq LIMIT ?",
                [zone, limit])
            var operations: [JSONValue] = []
            var entries: [(recordName: String, seq: Int64)] = []
            for row in rows {
                let name: String = row["recordName"]
                guard let record = try Self.fetchRecord(db, scope: .private, zone: zone, name: name, includingDeleted: true) else {
                    try db.run("DELETE FROM pending WHERE seq = ?", [row["seq"] as Int64])
                    continue
                }
                var wire: [String: JSONValue] = ["recordName": .string(name), "recordType": .string(record.recordType)]
                let operation: String
                if (row["kind"] as String) == "delete" {
                    operation = "delete"
                    wire["recordChangeTag"] = record.changeTag.map(JSONValue.string)
                } else if let tag = record.changeTag {
                    operation = "update"
                    wire["recordChangeTag"] = .string(tag)
                    wire["fields"] = .object(
                        Dictionary(uniqueKeysWithValues: Self.names(row["changedFields"]).map { ($0, record.fields[$0]?.json ?? ["value": .null]) }))
                } else {
                    operation = "create"
                    wire["fields"] = .object(record.fields.mapValues(\.json))
                }
                operations.append(["operationType": .string(operation), "record": .object(wire)])
                entries.append((name, row["seq"]))
            }
            guard !operations.isEmpty else { return nil }
            let batch = OutboxBatch(
                zone: zone, idempotencyKey: UUID().uuidString.lowercased(),
                body: Data(JSONWriter.encode(["operations": .array(operations), "zoneID": ["zoneName": .string(zone)], "atomic": false]).utf8),
                entries: entries)
            try db.run(
                "INSERT INTO outbox (id, zone, idempotencyKey, body, entries) VALUES (1, ?, ?, ?, ?)",
                [
                    zone, batch.idempotencyKey, batch.body,
                    JSONWriter.encode(.array(entries.map { ["recordName": .string($0.recordName), "seq": .int($0.seq)] })),
                ])
            return batch
        }
    }

    /// Applies the server's answer to the batch in flight and clears it, in one transaction. An edit made while the
    /// batch was in flight (a newer `seq`) stays queued.
    func applyAnswer(_ answer: JSONValue, to batch: OutboxBatch) throws -> PushOutcome {
        try self.database.write { db in
            var outcome = PushOutcome()
            let results = answer["records"]?.arrayValue ?? []
            for (entry, result) in zip(batch.entries, results) {
                let current = try db.value(Int64.self, "SELECT seq FROM pending WHERE zone = ? AND recordName = ?", [batch.zone, entry.recordName])
                let sameEdit = current == entry.seq
                if let code = result["serverErrorCode"]?.stringValue {
                    switch code {
                    case ServerErrorCode.conflict.rawValue, ServerErrorCode.exists.rawValue:
                        if let server = result["serverRecord"] {
                            _ = try self.applyServerRecord(db, scope: .private, zone: batch.zone, server)
                            outcome.merged += 1
                        } else {
                            outcome.needLookup.append(entry.recordName)
                        }
                    case ServerErrorCode.notFound.rawValue:
                        // Another device deleted it: the delete wins, as a tombstone in a fetch would.
                        _ = try self.applyServerRecord(
                            db, scope: .private, zone: batch.zone, ["recordName": .string(entry.recordName), "deleted": true])
                        outcome.dropped += 1
                    default:
                        let error = "\(code): \(result["reason"]?.stringValue ?? "")"
                        if sameEdit { try db.run("UPDATE pending SET lastError = ? WHERE seq = ?", [error, entry.seq]) }
                        outcome.refused.append((entry.recordName, error))
                    }
                } else if result["deleted"]?.boolValue == true {
                    if sameEdit {
                        try db.run("DELETE FROM pending WHERE seq = ?", [entry.seq])
                        try db.run(
                            "DELETE FROM records WHERE scope = 'private' AND zone = ? AND recordName = ? AND deleted = 1",
                            [batch.zone, entry.recordName])
                    }
                    outcome.deleted += 1
                } else {
                    if sameEdit { try db.run("DELETE FROM pending WHERE seq = ?", [entry.seq]) }
                    _ = try self.applyServerRecord(db, scope: .private, zone: batch.zone, result)
                    outcome.saved += 1
                }
            }
            try db.run("DELETE FROM outbox")
            return outcome
        }
    }

    /// Drops the batch in flight (the server wrote nothing of it); its edits stay queued for smaller batches.
    func discardBatch() throws {
        try self.database.write { db in try db.run("DELETE FROM outbox") }
    }

    /// Queues the edits the server refused again, for one more try (after a server-side fix, say).
    public func retryRefusedEdits() throws {
        try self.writeDurably { db in try db.run("UPDATE pending SET lastError = NULL WHERE lastError IS NOT NULL") }
    }

    /// The server refused the whole batch: each edit in it keeps the reason and waits for a new edit.
    func refuseBatch(_ batch: OutboxBatch, error: SyncError) throws {
        try self.database.write { db in
            for entry in batch.entries {
                try db.run("UPDATE pending SET lastError = ? WHERE seq = ?", ["\(error.code): \(error.reason)", entry.seq])
            }
            try db.run("DELETE FROM outbox")
        }
    }

    // MARK: uploads

    struct UploadState: Sendable {
        var checksum: String
        var size: Int64
        var url: String
        var createdAt: Int64
    }

    func upload(recordName: String, fieldName: String) throws -> UploadState? {
        try self.database.read { db in
            try db.row("SELECT * FROM uploads WHERE recordName = ? AND fieldName = ?", [recordName, fieldName]).map {
                UploadState(checksum: $0["checksum"], size: $0["size"], url: $0["url"], createdAt: $0["createdAt"])
            }
        }
    }

    func setUpload(_ state: UploadState?, recordName: String, fieldName: String) throws {
        try self.database.write { db in
            try db.run("DELETE FROM uploads WHERE recordName = ? AND fieldName = ?", [recordName, fieldName])
            if let state {
                try db.run(
                    "INSERT INTO uploads (recordName, fieldName, checksum, size, url, createdAt) VALUES (?, ?, ?, ?, ?, ?)",
                    [recordName, fieldName, state.checksum, state.size, state.url, state.createdAt])
            }
        }
    }
}
