import CloudCore
import CloudPostgres
import Metrics

/// `records/changes`, `changes/zone` and `changes/database` (also `zones/changes`): deltas after a change token.
extension DatabaseController {
    @Sendable func recordChanges(_ call: DatabaseCall) async throws -> WireWriter {
        let zone = try self.zone(call.body, in: call)
        let changes = try await self.records.changes(
            zoneName: zone, since: try call.body.string("syncToken"), limit: try call.body.int("resultsLimit"),
            desiredKeys: try call.body.desiredKeys(), recordTypes: try call.body.strings("desiredRecordTypes"), storedAnswers: true,
            in: call.database, logger: call.logger)
        self.recordsServed.increment(by: changes.records.count)
        var writer = try self.writer(call)
        if !changes.records.isEmpty { writer.unreadableTypes = try await self.unreadableTypes(call) }
        writer.object { writer in
            writer.json.key("zoneID"); writer.zoneID(zone, owner: call.database.ownerRecordName)
            writer.changes(changes, zone: zone, owner: call.database.ownerRecordName)
            writer.json.key("reverse"); writer.json.bool(false)
        }
        return writer
    }

    @Sendable func zoneChanges(_ call: DatabaseCall) async throws -> WireWriter {
        guard let entries = try call.body.array("zones") else { throw CloudError.badRequest("zones is required") }
        var pages: [(zone: String, page: Result<ZoneChanges, CloudError>)] = []
        for (index, raw) in entries.enumerated() {
            do {
                // A malformed entry, or another owner's zone, fails this entry only, exactly as a missing zone does.
                let entry = try WireObject(raw, path: "zones[\(index)]")
                let zone = try self.zone(entry, in: call)
                let changes = try await self.records.changes(
                    zoneName: zone, since: try entry.string("syncToken"),
                    limit: try entry.int("resultsLimit") ?? call.body.int("resultsLimit"),
                    desiredKeys: try entry.desiredKeys() ?? call.body.desiredKeys(),
                    recordTypes: try entry.strings("desiredRecordTypes") ?? call.body.strings("desiredRecordTypes"), storedAnswers: true,
                    in: call.database, logger: call.logger)
                self.recordsServed.increment(by: changes.records.count)
                pages.append((zone, .success(changes)))
            } catch let error as CloudError where error.code != .tryAgainLater && error.code != .internalError {
                pages.append((raw["zoneID"]?["zoneName"]?.stringValue ?? "", .failure(error)))
            }
        }
        let owner = call.database.ownerRecordName
        var writer = try self.writer(call)
        if pages.contains(where: { (try? $0.page.get())?.records.isEmpty == false }) {
            writer.unreadableTypes = try await self.unreadableTypes(call)
        }
        writer.object { writer in
            writer.list("zones") { writer in
                for (zone, page) in pages {
                    switch page {
                    case .success(let changes):
                        writer.object { writer in
                            writer.json.key("zoneID"); writer.zoneID(zone, owner: owner)
                            writer.changes(changes, zone: zone, owner: owner)
                        }
                    case .failure(let error):
                        writer.itemError(error, key: "zoneID", name: zone, zone: (zone, owner))
                    }
                }
            }
        }
        return writer
    }

    @Sendable func databaseChanges(_ call: DatabaseCall) async throws -> WireWriter {
        let changes = try await self.records.databaseChanges(
            since: try call.body.string("syncToken"), limit: try call.body.int("resultsLimit"), in: call.database, logger: call.logger)
        var writer = try self.writer(call)
        writer.object { writer in
            writer.list("zones") { writer in
                for zone in changes.zones where call.database.scope == .private || !UnlistedZone.contains(zone.zoneName) {
                    writer.object { writer in
                        writer.json.key("zoneID"); writer.zoneID(zone.zoneName, owner: call.database.ownerRecordName)
                        if zone.deleted { writer.json.key("deleted"); writer.json.bool(true) }
                    }
                }
            }
            writer.json.key("syncToken"); writer.json.string(changes.syncToken)
            writer.json.key("moreComing"); writer.json.bool(changes.moreComing)
        }
        return writer
    }
}

extension WireWriter {
    /// The members a page of zone changes adds to its zone's dictionary: `records`, `syncToken`, `moreComing`.
    mutating func changes(_ changes: ZoneChanges, zone: String, owner: String) {
        self.list("records") { writer in
            for record in changes.records where writer.unreadableTypes.isEmpty || !writer.unreadableTypes.contains(record.recordType) {
                writer.record(record, zoneName: zone, owner: owner)
            }
        }
        self.json.key("syncToken"); self.json.string(changes.syncToken)
        self.json.key("moreComing"); self.json.bool(changes.moreComing)
    }
}
