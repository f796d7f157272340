import CloudCore
import CloudPostgres

/// `subscriptions/list`, `subscriptions/lookup` and `subscriptions/modify`: a signed-in person's subscriptions in
/// the public or their private database. Notifications go to push tokens through the web courier
/// (`CourierController`); docs/SYNC.md, "Live sync".
extension DatabaseController {
    /// The caller's account: subscriptions belong to a person, in either database.
    func subscriber(_ call: DatabaseCall) throws -> Account {
        guard let account = call.caller.account else {
            // Never 421 to a signed request: fetch implementations send it again with the same signature, which the
            // replay guard then refuses (docs/AUTH.md).
            if call.caller.serverKeyID != nil {
                throw CloudError.accessDenied("subscriptions belong to a person; a server-to-server key acts for the operator")
            }
            throw CloudError(.authenticationRequired, "subscriptions belong to a signed-in user (ckWebAuthToken)")
        }
        return account
    }

    @Sendable func listSubscriptions(_ call: DatabaseCall) async throws -> WireWriter {
        let found = try await self.records.subscriptions(of: try self.subscriber(call).id, in: call.database, logger: call.logger)
        var writer = WireWriter()
        writer.object { writer in
            writer.list("subscriptions") { writer in
                for definition in found.values.sorted(by: { ($0["subscriptionID"]?.stringValue ?? "") < ($1["subscriptionID"]?.stringValue ?? "") }) {
                    writer.json.value(definition)
                }
            }
        }
        return writer
    }

    @Sendable func lookupSubscriptions(_ call: DatabaseCall) async throws -> WireWriter {
        guard let entries = try call.body.objects("subscriptions") else { throw CloudError.badRequest("subscriptions is required") }
        let ids = try entries.map { entry in
            guard let id = try entry.string("subscriptionID") else { throw CloudError.badRequest("\(entry.name("subscriptionID")) is required") }
            return id
        }
        let found = try await self.records.subscriptions(of: try self.subscriber(call).id, in: call.database, ids: ids, logger: call.logger)
        var writer = WireWriter()
        writer.object { writer in
            writer.list("subscriptions") { writer in
                for id in ids {
                    if let definition = found[id] {
                        writer.json.value(definition)
                    } else {
                        writer.itemError(CloudError(.notFound, "subscription \(id) does not exist"), key: "subscriptionID", name: id)
                    }
                }
            }
        }
        return writer
    }

    @Sendable func modifySubscriptions(_ call: DatabaseCall) async throws -> WireWriter {
        let account = try self.subscriber(call)
        guard let operations = try call.body.objects("operations") else { throw CloudError.badRequest("operations is required") }
        guard operations.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("a request may hold at most \(self.records.limits.maxOperations) operations")
        }
        let schema = try await self.records.deployedSchema(
            in: SchemaScope(container: call.container, environment: call.environment), logger: call.logger)
        // A malformed operation fails alone, as a per-item error; the others are applied.
        var read: [(id: String, change: Result<SubscriptionChange, CloudError>)] = []
        for operation in operations {
            let id = operation["subscription"]?["subscriptionID"]?.stringValue ?? ""
            do {
                read.append((id, .success(try Self.subscriptionChange(operation, in: call, schema: schema))))
            } catch let error as CloudError {
                read.append((id, .failure(error)))
            }
        }
        let changes = read.compactMap { try? $0.change.get() }
        let outcomes = try await self.records.modifySubscriptions(
            changes, of: account.id, in: call.database, limit: self.configuration.live.maxSubscriptions, logger: call.logger)
        var applied = outcomes.makeIterator()
        var writer = WireWriter()
        writer.object { writer in
            writer.list("subscriptions") { writer in
                for (id, change) in read {
                    let outcome = change.flatMap { _ in applied.next() ?? .failure(CloudError(.internalError, "no outcome")) }
                    switch outcome {
                    case .success(let definition?): writer.json.value(definition)
                    case .success(nil):
                        writer.object { writer in
                            writer.json.key("subscriptionID"); writer.json.string(id)
                            writer.json.key("deleted"); writer.json.bool(true)
                        }
                    case .failure(let error): writer.itemError(error, key: "subscriptionID", name: id)
                    }
                }
            }
        }
        return writer
    }

    /// One operation of `subscriptions/modify`, checked.
    static func subscriptionChange(_ operation: WireObject, in call: DatabaseCall, schema: Schema?) throws -> SubscriptionChange {
        guard let type = try operation.string("operationType") else { throw CloudError.badRequest("\(operation.name("operationType")) is required") }
        guard let wire = try operation.object("subscription") else { throw CloudError.badRequest("\(operation.name("subscription")) is required") }
        switch type {
        case "create", "update":
            return .save(try Subscription(wire: wire, owner: call.database.ownerRecordName, schema: schema), mustExist: type == "update")
        case "delete":
            guard let id = try wire.string("subscriptionID") else { throw CloudError.badRequest("\(wire.name("subscriptionID")) is required") }
            return .delete(id: id)
        default:
            throw CloudError.badRequest("\(operation.name("operationType")) must be create, update or delete, not \(type)")
        }
    }
}

extension Subscription {
    static let wireKeys: Set<String> = [
        "subscriptionID", "subscriptionType", "query", "zoneID", "zoneWide", "firesOn", "firesOnce", "notificationInfo",
    ]

    /// Reads and checks a subscription dictionary. Unknown keys, types and triggers are refused; a query must pass
    /// the deployed schema's `check` (queryable filters), as CloudKit requires.
    init(wire: WireObject, owner: String, schema: Schema?) throws {
        if let unknown = wire.values.keys.sorted().first(where: { !Self.wireKeys.contains($0) }) {
            throw CloudError.badRequest(
                "\(wire.name(unknown)) is not a subscription field; use \(Self.wireKeys.sorted().joined(separator: ", "))")
        }
        guard let id = try wire.string("subscriptionID"), !id.isEmpty, id.utf8.count <= 255 else {
            throw CloudError.badRequest("\(wire.name("subscriptionID")) is required (1 to 255 bytes)")
        }
        let typeName = try wire.string("subscriptionType") ?? ""
        guard let kind = Kind(rawValue: typeName) else {
            throw CloudError.badRequest(
                "\(wire.name("subscriptionType")) must be one of \(Kind.allCases.map(\.rawValue).joined(separator: ", ")), not \(typeName)")
        }
        var zoneName: String?
        if try wire.object("zoneID") != nil {
            guard kind != .database else { throw CloudError.badRequest("a database subscription has no zoneID") }
            let (name, zoneOwner) = try wire.zoneName()
            // Another person's zone is indistinguishable from a missing one, as everywhere.
            if let zoneOwner, !owner.isEmpty, zoneOwner != owner, !["__defaultOwner__", "_defaultOwner"].contains(zoneOwner) {
                throw CloudError(.zoneNotFound, "zone \(name) does not exist")
            }
            zoneName = name
        } else if kind == .zone {
            throw CloudError.badRequest("\(wire.name("zoneID")) is required for a zone subscription")
        }
        var query: RecordQuery?
        if kind == .query {
            guard let queryObject = try wire.object("query") else { throw CloudError.badRequest("\(wire.name("query")) is required") }
            let parsed = try RecordQuery(wire: queryObject)
            try schema?.check(parsed, path: wire.name("query"))
            query = parsed
        } else if wire["query"] != nil {
            throw CloudError.badRequest("only a query subscription has a query")
        }
        var firesOn = Triggers.all
        if let names = try wire.strings("firesOn") {
            firesOn = []
            for name in names {
                guard let trigger = Triggers.names.first(where: { $0.0 == name })?.1 else {
                    throw CloudError.badRequest("\(wire.name("firesOn")) may hold create, update and delete, not \(name)")
                }
                firesOn.insert(trigger)
            }
            guard !firesOn.isEmpty else { throw CloudError.badRequest("\(wire.name("firesOn")) must name at least one of create, update, delete") }
        }
        let firesOnce = try wire.bool("firesOnce") ?? false
        let notificationInfo = try wire.object("notificationInfo")
        var definition: [String: JSONValue] = [
            "subscriptionID": .string(id), "subscriptionType": .string(kind.rawValue), "firesOnce": .bool(firesOnce),
        ]
        if kind == .query {
            definition["query"] = wire["query"]
            definition["firesOn"] = .array(Triggers.names.filter { firesOn.contains($0.1) }.map { .string($0.0) })
            definition["zoneWide"] = .bool(zoneName == nil)
        }
        if let zoneName { definition["zoneID"] = ["zoneName": .string(zoneName), "ownerRecordName": .string(owner)] }
        if let notificationInfo { definition["notificationInfo"] = .object(notificationInfo.values) }
        self.init(
            id: id, kind: kind, zoneName: zoneName, query: query, firesOn: kind == .query ? firesOn : .all, firesOnce: firesOnce,
            definition: .object(definition))
    }
}
