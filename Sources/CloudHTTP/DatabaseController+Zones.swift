import CloudCore

/// `zones/list`, `zones/lookup` and `zones/modify`.
extension DatabaseController {
    @Sendable func listZones(_ call: DatabaseCall) async throws -> WireWriter {
        let zones = try await self.records.listZones(in: call.database, logger: call.logger)
        var writer = WireWriter()
        writer.object { writer in
            writer.list("zones") { writer in
                for zone in zones { writer.zone(zone, owner: call.database.ownerRecordName) }
            }
        }
        return writer
    }

    @Sendable func lookupZones(_ call: DatabaseCall) async throws -> WireWriter {
        guard let entries = try call.body.array("zones") else { throw CloudError.badRequest("zones is required") }
        let names = try entries.enumerated().map { index, entry in
            try self.zone(WireObject(.object(["zoneID": entry]), path: "zones[\(index)]"), in: call)
        }
        let zones = try await self.records.lookupZones(names, in: call.database, logger: call.logger)
        let owner = call.database.ownerRecordName
        var writer = WireWriter()
        writer.object { writer in
            writer.list("zones") { writer in
                for (name, zone) in zip(names, zones) {
                    if let zone {
                        writer.zone(zone, owner: owner)
                    } else {
                        writer.itemError(CloudError(.zoneNotFound, "zone \(name) does not exist"), key: "zoneID", name: name, zone: (name, owner))
                    }
                }
            }
        }
        return writer
    }

    @Sendable func modifyZones(_ call: DatabaseCall) async throws -> WireWriter {
        guard let entries = try call.body.objects("operations") else { throw CloudError.badRequest("operations is required") }
        let operations = try entries.map { entry -> ZoneOperation in
            guard let zone = try entry.object("zone") else { throw CloudError.badRequest("\(entry.name("zone")) is required") }
            let name = try self.zone(zone, in: call)
            switch try entry.string("operationType") {
            case "create": return .create(name)
            case "delete": return .delete(name)
            default: throw CloudError.badRequest("\(entry.name("operationType")) must be create or delete")
            }
        }
        let outcomes = try await self.records.modifyZones(operations, in: call.database, logger: call.logger)
        let owner = call.database.ownerRecordName
        var writer = WireWriter()
        writer.object { writer in
            writer.list("zones") { writer in
                for outcome in outcomes {
                    switch outcome {
                    case .created(let zone): writer.zone(zone, owner: owner)
                    case .deleted(let name): writer.deleted("zoneID", name: name, owner: owner)
                    case .failed(let name, let error): writer.itemError(error, key: "zoneID", name: name, zone: (name, owner))
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
