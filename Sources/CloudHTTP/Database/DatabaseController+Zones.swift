import CloudCore
import CloudPostgres

/// `zones/list`, `zones/lookup` and `zones/modify`.
extension DatabaseController {
    @Sendable func listZones(_ call: DatabaseCall) async throws -> WireWriter {
        let zones = try await self.records.listZones(in: call.database, logger: call.logger)
            .filter { call.database.scope == .private || !UnlistedZone.contains($0.zoneName) }
        var writer = WireWriter()
        writer.object { writer in
            writer.list("zones") { writer in
                for zone in zones { writer.zone(zone, owner: call.database.ownerRecordName) }
            }
        }
        return writer
    }

    @Sendable func lookupZones(_ call: DatabaseCall) async throws -> WireWriter {
        // Entries are zone IDs themselves; a malformed one fails alone.
        let entries = try call.body.entries("zones") { zoneID in
            try self.zone(WireObject(.object(["zoneID": .object(zoneID.values)]), path: zoneID.path), in: call)
        }
        guard let entries else { throw CloudError.badRequest("zones is required") }
        let zones = try await self.records.lookupZones(readable(entries), in: call.database, logger: call.logger)
        let owner = call.database.ownerRecordName
        var writer = WireWriter()
        writer.object { writer in
            writer.list("zones") { writer in
                for (raw, answer) in answered(entries, zones) {
                    switch answer {
                    case .failure(let error):
                        let name = raw["zoneName"]?.stringValue ?? ""
                        writer.itemError(error, key: "zoneID", name: name, zone: (name, owner))
                    case .success((_, let zone?)):
                        writer.zone(zone, owner: owner)
                    case .success((let name, nil)):
                        writer.itemError(CloudError(.zoneNotFound, "zone \(name) does not exist"), key: "zoneID", name: name, zone: (name, owner))
                    }
                }
            }
        }
        return writer
    }

    @Sendable func modifyZones(_ call: DatabaseCall) async throws -> WireWriter {
        let entries = try call.body.entries("operations") { entry -> ZoneOperation in
            guard let zone = try entry.object("zone") else { throw CloudError.badRequest("\(entry.name("zone")) is required") }
            let name = try self.zone(zone, in: call)
            switch try entry.string("operationType") {
            case "create": return .create(name)
            case "delete": return .delete(name)
            default: throw CloudError.badRequest("\(entry.name("operationType")) must be create or delete")
            }
        }
        guard let entries else { throw CloudError.badRequest("operations is required") }
        guard entries.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("a request may hold at most \(self.records.limits.maxOperations) operations")
        }
        // A person's new unlisted zones count against their public writes, as records do.
        _ = try self.publicWriter(call, writing: entries.count)
        // A malformed operation fails alone; the others run in request order.
        let outcomes = try await self.records.modifyZones(readable(entries), in: call.database, logger: call.logger)
        let owner = call.database.ownerRecordName
        var writer = WireWriter()
        writer.object { writer in
            writer.list("zones") { writer in
                for (raw, answer) in answered(entries, outcomes) {
                    switch answer {
                    case .failure(let error):
                        let name = raw["zone"]?["zoneID"]?["zoneName"]?.stringValue ?? ""
                        writer.itemError(error, key: "zoneID", name: name, zone: (name, owner))
                    case .success((_, .created(let zone))): writer.zone(zone, owner: owner)
                    case .success((_, .deleted(let name))): writer.deleted("zoneID", name: name, owner: owner)
                    case .success((_, .failed(let name, let error))): writer.itemError(error, key: "zoneID", name: name, zone: (name, owner))
                    }
                }
            }
        }
        return writer
    }
}

extension WireWriter {
    /// A zone dictionary: `zoneID`, `syncToken`, `atomic`.
    mutating func zone(_ zone: ZoneInfo, owner: String) {
        self.object { writer in
            writer.json.key("zoneID"); writer.zoneID(zone.zoneName, owner: owner)
            writer.json.key("syncToken"); writer.json.string(zone.syncToken)
            writer.json.key("atomic"); writer.json.bool(zone.zoneName != defaultZoneName)
        }
    }
}
