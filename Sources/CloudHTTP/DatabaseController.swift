import CloudAssets
import CloudCore
import CloudPostgres
import Crypto
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore

/// Everything a database operation needs about its request.
struct DatabaseCall {
    var body: WireObject
    var database: DatabaseRef
    var caller: Caller
    var logger: Logger
    var deviceID: String
    /// `http://host:port` as the client reached us, for the absolute URLs we hand out.
    var baseURL: String
    /// Extension: the `Idempotency-Key` header of a write, with a hash of the request it names.
    var idempotencyKey: (key: String, requestHash: Data)?
}

/// The CloudKit Web Services routes under `/database/1/{container}/{environment}/{database}/…`.
struct DatabaseController: Sendable {
    let records: RecordStore
    let authenticator: RequestAuthenticator
    let maxBodyBytes: Int
    let assets: any AssetStore
    let capabilities: AssetCapabilities
    let configuration: ServerConfiguration
    let recordsWritten = Counter(label: "stadiumcloud_records_written_total")
    let recordsServed = Counter(label: "stadiumcloud_change_records_served_total")

    func addRoutes(to router: Router<BasicRequestContext>, extensions: [ExtensionEndpoint] = []) {
        let group = router.group("database/1/:container/:environment/:database")
        for endpoint in extensions {
            group.post(RouterPath(endpoint.path)) { request, context in
                try await self.run(request, context) { call in
                    var writer = WireWriter()
                    writer.json.value(try await endpoint.handler(.object(call.body.values), call.database, call.logger))
                    return writer
                }
            }
        }
        group.post("records/modify") { request, context in try await self.run(request, context, writes: true, self.modify) }
        group.post("records/lookup") { request, context in try await self.run(request, context, self.lookup) }
        group.post("records/query") { request, context in try await self.run(request, context, self.query) }
        group.post("records/changes") { request, context in try await self.run(request, context, self.recordChanges) }
        group.post("changes/zone") { request, context in try await self.run(request, context, self.zoneChanges) }
        group.post("changes/database") { request, context in try await self.run(request, context, self.databaseChanges) }
        group.post("zones/changes") { request, context in try await self.run(request, context, self.databaseChanges) }
        group.get("zones/list") { request, context in try await self.run(request, context, self.listZones) }
        group.post("zones/lookup") { request, context in try await self.run(request, context, self.lookupZones) }
        group.post("zones/modify") { request, context in try await self.run(request, context, writes: true, self.modifyZones) }
        group.post("assets/upload") { request, context in try await self.run(request, context, writes: true, self.requestUploads) }
        group.post("assets/rereference") { request, context in try await self.run(request, context, writes: true, self.rereference) }
        group.get("users/current") { request, context in try await self.currentUser(request, context, caller: false) }
        group.get("users/caller") { request, context in try await self.currentUser(request, context, caller: true) }
        for unsupported in ["subscriptions/list", "subscriptions/lookup", "subscriptions/modify", "records/resolve", "records/accept",
                            "users/discover", "users/lookup/email", "users/lookup/id", "tokens/create", "tokens/register"] {
            group.on(RouterPath(unsupported), method: .post) { _, _ -> Response in throw Self.unsupported(unsupported) }
            group.on(RouterPath(unsupported), method: .get) { _, _ -> Response in throw Self.unsupported(unsupported) }
        }
    }

    static func unsupported(_ path: String) -> CloudError {
        .badRequest("\(path) is not supported by this server; devices poll changes/database and changes/zone")
    }

    // MARK: Request plumbing

    /// Authenticates, resolves the database, parses the body, runs `operation` and answers its JSON.
    func run(
        _ request: Request, _ context: BasicRequestContext, writes: Bool = false,
        _ operation: @escaping @Sendable (DatabaseCall) async throws -> WireWriter
    ) async throws -> Response {
        var streaming = request
        let logger = context.logger
        let (container, environment) = try self.containerAndEnvironment(context)
        let scopeName = try context.parameters.require("database")
        guard let scope = DatabaseScope(rawValue: scopeName) else {
            throw CloudError.badRequest(scopeName == "shared" ? "the shared database is not supported by this server" : "database must be public or private, not \(scopeName)")
        }
        // The body comes first: a server-to-server signature covers it.
        let bytes: ByteBuffer
        do {
            bytes = request.method == .post ? try await streaming.collectBody(upTo: self.maxBodyBytes) : ByteBuffer()
        } catch is NIOTooManyBytesError {
            throw CloudError.badRequest("the request body is larger than \(self.maxBodyBytes) bytes; split the request")
        }
        return try await withDatabaseDeadline(self.configuration.databaseTimeout) {
            try await self.answer(request, bytes: bytes, container: container, environment: environment, scope: scope, writes: writes, logger: logger, operation)
        }
    }

    /// The database part of `run`: everything from authentication to the answer, under the database deadline.
    private func answer(
        _ request: Request, bytes: ByteBuffer, container: String, environment: String, scope: DatabaseScope, writes: Bool, logger: Logger,
        _ operation: @Sendable (DatabaseCall) async throws -> WireWriter
    ) async throws -> Response {
        let caller = try await self.authenticator.caller(for: request, body: bytes, logger: logger)
        if scope == .private {
            guard caller.serverKeyID == nil else { throw CloudError.accessDenied("server-to-server keys reach the public database only") }
            guard caller.account != nil else {
                throw self.authenticator.authenticationRequired(request, "the private database needs a signed-in user (ckWebAuthToken)")
            }
        }
        if scope == .public, writes, caller.serverKeyID == nil {
            throw CloudError.accessDenied("writing the public database needs a server-to-server key (stadiumcloud keys add)")
        }
        let body = bytes.readableBytes == 0 ? JSONValue.object([:]) : try JSONValue.parse(bytes.readableBytesView)
        let database = try await self.records.database(
            container: container, environment: environment, scope: scope,
            owner: scope == .private ? caller.account : nil, logger: logger)
        var call = DatabaseCall(
            body: try WireObject(body, path: ""), database: database, caller: caller, logger: logger,
            deviceID: request.headers[.deviceID] ?? "StadiumCloud", baseURL: baseURL(of: request, self.configuration))
        if let key = request.headers[.idempotencyKey] {
            try FieldName.validate(key, path: "header", what: "Idempotency-Key")
            call.idempotencyKey = (key, Data(SHA256.hash(data: Array(request.uri.path.utf8) + Array(bytes.readableBytesView))))
        }
        var response = try await operation(call).response()
        response.headers[.webAuthToken] = await self.authenticator.rotatedToken(for: caller, request: request, logger: logger)
        return response
    }

    /// The URL's container (one this server serves) and environment.
    func containerAndEnvironment(_ context: BasicRequestContext) throws -> (container: String, environment: String) {
        let environment = try context.parameters.require("environment")
        guard environment == "development" || environment == "production" else {
            throw CloudError.badRequest("environment must be development or production, not \(environment)")
        }
        let container = try context.parameters.require("container")
        guard self.configuration.containers.contains(container) else {
            throw CloudError.notFound("container \(container) is not served here")
        }
        return (container, environment)
    }

    /// Reads the zone of a request; a zone owned by someone else is indistinguishable from a missing one.
    func zone(_ object: WireObject, in call: DatabaseCall) throws -> String {
        let (name, owner) = try object.zoneName()
        if call.database.scope == .private, let owner, owner != call.database.ownerRecordName, !["__defaultOwner__", "_defaultOwner"].contains(owner) {
            throw CloudError(.zoneNotFound, "zone \(name) does not exist")
        }
        return name
    }

    func writer(_ call: DatabaseCall) throws -> WireWriter {
        var writer = WireWriter()
        writer.numbersAsStrings = try call.body.bool("numbersAsStrings") ?? call.body.bool("numberAsStrings") ?? false
        let owner = assetOwner(call.database)
        let lifetime = self.configuration.downloadURLLifetimeSeconds
        let capabilities = self.capabilities
        let base = call.baseURL
        // CloudKit's download URLs carry a ${f} placeholder that clients replace with a file name.
        writer.downloadURL = { checksum in
            "\(base)/assets/download/\(owner)/\(checksum)/${f}?s=\(capabilities.sign(.download, owner: owner, validFor: lifetime, subject: checksum))"
        }
        return writer
    }

    // MARK: assets/*

    /// `assets/upload`: an upload URL per token.
    @Sendable func requestUploads(_ call: DatabaseCall) async throws -> WireWriter {
        guard let tokens = try call.body.objects("tokens"), !tokens.isEmpty else { throw CloudError.badRequest("tokens is required") }
        guard tokens.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("at most \(self.records.limits.maxOperations) tokens per request")
        }
        let owner = assetOwner(call.database)
        var writer = WireWriter()
        writer.json.beginObject()
        writer.json.key("tokens")
        writer.json.beginArray()
        for token in tokens {
            guard let fieldName = try token.string("fieldName") else { throw CloudError.badRequest("\(token.name("fieldName")) is required") }
            let upload = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            writer.json.beginObject()
            writer.json.key("recordName"); writer.json.string(try token.string("recordName") ?? UUID().uuidString)
            writer.json.key("fieldName"); writer.json.string(fieldName)
            writer.json.key("url")
            writer.json.string("\(call.baseURL)/assets/upload/\(upload)?c=\(self.capabilities.sign(.upload, owner: owner, validFor: self.configuration.uploadURLLifetimeSeconds, subject: upload))")
            writer.json.endObject()
        }
        writer.json.endArray()
        writer.json.endObject()
        return writer
    }

    /// A receipt sent with an asset must be this database's, unexpired and of that size; the store then checks,
    /// under the write lock, that the database has the asset (docs/ASSETS.md).
    func checkReceipts(in operations: [RecordOperation], database: DatabaseRef) throws {
        let owner = assetOwner(database)
        func assets(in value: JSONValue) -> [[String: JSONValue]] {
            switch value {
            case .object(let object) where object["fileChecksum"] != nil: [object]
            case .object(let object): object.values.flatMap(assets)
            case .array(let items): items.flatMap(assets)
            default: []
            }
        }
        for operation in operations {
            for asset in operation.fields.map({ assets(in: .object($0)) }) ?? [] {
                guard let receipt = asset["receipt"]?.stringValue else { continue }
                guard let grant = self.capabilities.verify(.receipt, receipt), grant.owner == owner,
                    grant.subject == asset["fileChecksum"]?.stringValue
                else { throw CloudError.badRequest("record \(operation.recordName): the asset receipt is not valid for this database") }
                guard grant.expires > Timestamp.now else {
                    throw CloudError.badRequest("record \(operation.recordName): the asset receipt has expired; upload the asset again")
                }
                if let size = asset["size"]?.int64Value, size != grant.size {
                    throw CloudError.badRequest("record \(operation.recordName): the asset size does not match its receipt")
                }
            }
        }
    }

    /// `assets/rereference`: fresh receipts for assets records already hold, to put them in other records.
    @Sendable func rereference(_ call: DatabaseCall) async throws -> WireWriter {
        guard let entries = try call.body.objects("assets"), !entries.isEmpty else { throw CloudError.badRequest("assets is required") }
        let wanted = try entries.map { entry -> (String, String) in
            guard let name = try entry.string("recordName"), let field = try entry.string("fieldName") else {
                throw CloudError.badRequest("\(entry.path) needs recordName and fieldName")
            }
            return (name, field)
        }
        let zone = try self.zone(call.body, in: call)
        let found = try await self.records.lookup(wanted.map(\.0), zoneName: zone, desiredKeys: Array(Set(wanted.map(\.1))), in: call.database, logger: call.logger)
        let owner = assetOwner(call.database)
        var writer = WireWriter()
        writer.json.beginObject()
        writer.json.key("assets")
        writer.json.beginArray()
        for ((name, field), record) in zip(wanted, found) {
            guard let record, let stored = try JSONValue.parse(Array(record.fieldsJSON.utf8))[field].flatMap(FieldValue.init(stored:)),
                stored.type == .asset, let checksum = stored.value["fileChecksum"]?.stringValue, let size = stored.value["size"]?.int64Value
            else {
                writer.itemError(.notFound("record \(name) has no asset in \(field)"), key: "recordName", name: name)
                continue
            }
            writer.json.value([
                "recordName": .string(name), "fieldName": .string(field), "fileChecksum": .string(checksum), "size": .int(size),
                "receipt": .string(self.capabilities.sign(.receipt, owner: owner, validFor: self.configuration.receiptLifetimeSeconds, size: size, subject: checksum)),
            ])
        }
        writer.json.endArray()
        writer.json.endObject()
        return writer
    }

    // MARK: records/*

    @Sendable func modify(_ call: DatabaseCall) async throws -> WireWriter {
        guard let entries = try call.body.objects("operations") else { throw CloudError.badRequest("operations is required") }
        guard entries.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("a request may hold at most \(self.records.limits.maxOperations) operations; this one has \(entries.count): split it")
        }
        var zoneName = try call.body["zoneID"] == nil ? nil : self.zone(call.body, in: call)
        var operations: [RecordOperation] = []
        for entry in entries {
            if let record = try entry.object("record"), record["zoneID"] != nil {
                let recordZone = try self.zone(record, in: call)
                guard zoneName == nil || zoneName == recordZone else {
                    throw CloudError.badRequest("all operations of one request must be in one zone; \(record.name("zoneID")) names \(recordZone), not \(zoneName!)")
                }
                zoneName = recordZone
            }
            operations.append(try RecordOperation(wire: entry))
        }
        let zone = zoneName ?? defaultZoneName
        try self.checkReceipts(in: operations, database: call.database)
        let stamp = ChangeStamp(timestamp: Timestamp.now, userRecordName: call.caller.userRecordName, deviceID: call.deviceID)
        let desiredKeys = try call.body.desiredKeys()
        let entryKeys = try entries.map { try $0.desiredKeys() ?? desiredKeys }
        let base = try self.writer(call)
        let owner = call.database.ownerRecordName
        let answer: @Sendable (ModifyResult) -> WireWriter = { result in
            Self.modifyAnswer(result, entryKeys: entryKeys, zone: zone, owner: owner, into: base)
        }
        let idempotency = call.idempotencyKey.map { key in
            IdempotentWrite(key: key.key, requestHash: key.requestHash) { result in
                let writer = answer(result)
                return StoredAnswer(status: Int(writer.status.code), body: writer.json.bytes)
            }
        }
        let result = try await self.records.modify(
            operations, zoneName: zone, atomic: try call.body.bool("atomic"), in: call.database, stamp: stamp,
            idempotency: idempotency, logger: call.logger)
        if !result.atomicFailed { self.recordsWritten.increment(by: result.outcomes.filter { !$0.isFailure }.count) }
        if let stored = result.answer {
            var writer = WireWriter()
            writer.status = HTTPResponse.Status(code: stored.status)
            writer.json = JSONWriter(bytes: stored.body)
            return writer
        }
        return answer(result)
    }

    /// The `records/modify` answer: each operation's saved record, tombstone or error, in request order.
    static func modifyAnswer(_ result: ModifyResult, entryKeys: [[String]?], zone: String, owner: String, into base: WireWriter) -> WireWriter {
        var writer = base
        writer.json.beginObject()
        writer.json.key("records")
        writer.json.beginArray()
        for (keys, outcome) in zip(entryKeys, result.outcomes) {
            switch outcome {
            case .saved(let record):
                writer.record(RecordSnapshot(record, desiredKeys: keys.map(Set.init)), zoneName: zone, owner: owner)
            case .deleted(let name, _):
                writer.json.beginObject()
                writer.json.key("recordName"); writer.json.string(name)
                writer.json.key("deleted"); writer.json.bool(true)
                writer.json.endObject()
            case .failed(let name, let error, let serverRecord):
                writer.itemError(error, key: "recordName", name: name, serverRecord: serverRecord.map { RecordSnapshot($0) }, zone: (zone, owner))
            }
        }
        writer.json.endArray()
        writer.json.endObject()
        // A failed atomic batch is HTTP 400 with the per-record results (the culprit's real code, ATOMIC_ERROR for
        // the others), as CloudKit answers it.
        if result.atomicFailed { writer.status = .badRequest }
        return writer
    }

    @Sendable func lookup(_ call: DatabaseCall) async throws -> WireWriter {
        guard let entries = try call.body.objects("records") else { throw CloudError.badRequest("records is required") }
        guard entries.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("a lookup may name at most \(self.records.limits.maxOperations) records")
        }
        let names = try entries.map { entry -> String in
            guard let name = try entry.string("recordName") else { throw CloudError.badRequest("\(entry.name("recordName")) is required") }
            return name
        }
        let zone = try self.zone(call.body, in: call)
        let found = try await self.records.lookup(names, zoneName: zone, desiredKeys: try call.body.desiredKeys(), in: call.database, logger: call.logger)
        var writer = try self.writer(call)
        writer.json.beginObject()
        writer.json.key("records")
        writer.json.beginArray()
        for (name, record) in zip(names, found) {
            if let record {
                writer.record(record, zoneName: zone, owner: call.database.ownerRecordName)
            } else {
                writer.itemError(.notFound("record \(name) does not exist"), key: "recordName", name: name)
            }
        }
        writer.json.endArray()
        writer.json.endObject()
        return writer
    }

    @Sendable func query(_ call: DatabaseCall) async throws -> WireWriter {
        guard let queryObject = try call.body.object("query") else { throw CloudError.badRequest("query is required") }
        let query = try RecordQuery(wire: queryObject)
        let zoneWide = try call.body["zoneID"] == nil && (call.body.bool("zoneWide") ?? false)
        let zone = try self.zone(call.body, in: call)
        let desiredKeys = try call.body.desiredKeys()
        // A marker is valid only for the same query, zone and keys, in the same database.
        let queryHash = ContinuationMarker.hash(
            of: JSONWriter.encode(.object([
                "database": .int(call.database.id), "query": .object(queryObject.values), "zone": .string(zoneWide ? "*" : zone),
                "keys": desiredKeys.map { .array($0.map(JSONValue.string)) } ?? .null,
            ])))
        var offset: Int64 = 0
        if let marker = try call.body.string("continuationMarker") {
            offset = try ContinuationMarker.decode(marker, queryHash: queryHash, with: self.records.signer).offset
        }
        let page = try await self.records.query(
            query, zoneName: zoneWide ? nil : zone, offset: offset, limit: try call.body.int("resultsLimit"),
            desiredKeys: desiredKeys, in: call.database, logger: call.logger)
        var writer = try self.writer(call)
        writer.json.beginObject()
        writer.json.key("records")
        writer.json.beginArray()
        for (record, zoneName) in zip(page.records, page.zoneNames) {
            writer.record(record, zoneName: zoneName, owner: call.database.ownerRecordName)
        }
        writer.json.endArray()
        if let next = page.nextOffset {
            writer.json.key("continuationMarker")
            writer.json.string(ContinuationMarker(queryHash: queryHash, offset: next).encode(with: self.records.signer))
        }
        writer.json.endObject()
        return writer
    }

    @Sendable func recordChanges(_ call: DatabaseCall) async throws -> WireWriter {
        let zone = try self.zone(call.body, in: call)
        let changes = try await self.records.changes(
            zoneName: zone, since: try call.body.string("syncToken"), limit: try call.body.int("resultsLimit"),
            desiredKeys: try call.body.desiredKeys(), recordTypes: try call.body.strings("desiredRecordTypes"),
            in: call.database, logger: call.logger)
        self.recordsServed.increment(by: changes.records.count)
        var writer = try self.writer(call)
        writer.json.beginObject()
        writer.json.key("zoneID"); writer.zoneID(zone, owner: call.database.ownerRecordName)
        self.writeChanges(changes, zone: zone, owner: call.database.ownerRecordName, into: &writer)
        writer.json.key("reverse"); writer.json.bool(false)
        writer.json.endObject()
        return writer
    }

    func writeChanges(_ changes: ZoneChanges, zone: String, owner: String, into writer: inout WireWriter) {
        writer.json.key("records")
        writer.json.beginArray()
        for record in changes.records { writer.record(record, zoneName: zone, owner: owner) }
        writer.json.endArray()
        writer.json.key("syncToken"); writer.json.string(changes.syncToken)
        writer.json.key("moreComing"); writer.json.bool(changes.moreComing)
    }

    @Sendable func zoneChanges(_ call: DatabaseCall) async throws -> WireWriter {
        guard let zones = try call.body.objects("zones") else { throw CloudError.badRequest("zones is required") }
        let owner = call.database.ownerRecordName
        var writer = try self.writer(call)
        writer.json.beginObject()
        writer.json.key("zones")
        writer.json.beginArray()
        for entry in zones {
            let (zoneName, _) = try entry.zoneName()
            do {
                // Another owner's zone fails this entry only, exactly as a missing zone does.
                let zone = try self.zone(entry, in: call)
                let changes = try await self.records.changes(
                    zoneName: zone, since: try entry.string("syncToken"),
                    limit: try entry.int("resultsLimit") ?? call.body.int("resultsLimit"),
                    desiredKeys: try entry.desiredKeys() ?? call.body.desiredKeys(),
                    recordTypes: try entry.strings("desiredRecordTypes") ?? call.body.strings("desiredRecordTypes"),
                    in: call.database, logger: call.logger)
                self.recordsServed.increment(by: changes.records.count)
                writer.json.beginObject()
                writer.json.key("zoneID"); writer.zoneID(zone, owner: owner)
                self.writeChanges(changes, zone: zone, owner: owner, into: &writer)
                writer.json.endObject()
            } catch let error as CloudError where error.code != .tryAgainLater && error.code != .internalError {
                writer.itemError(error, key: "zoneID", name: zoneName, zone: (zoneName, owner))
            }
        }
        writer.json.endArray()
        writer.json.endObject()
        return writer
    }

    @Sendable func databaseChanges(_ call: DatabaseCall) async throws -> WireWriter {
        let changes = try await self.records.databaseChanges(
            since: try call.body.string("syncToken"), limit: try call.body.int("resultsLimit"), in: call.database, logger: call.logger)
        var writer = try self.writer(call)
        writer.json.beginObject()
        writer.json.key("zones")
        writer.json.beginArray()
        for zone in changes.zones {
            writer.json.beginObject()
            writer.json.key("zoneID"); writer.zoneID(zone.zoneName, owner: call.database.ownerRecordName)
            if zone.deleted { writer.json.key("deleted"); writer.json.bool(true) }
            writer.json.endObject()
        }
        writer.json.endArray()
        writer.json.key("syncToken"); writer.json.string(changes.syncToken)
        writer.json.key("moreComing"); writer.json.bool(changes.moreComing)
        writer.json.endObject()
        return writer
    }

    // MARK: zones/*

    func writeZone(_ zone: ZoneInfo, owner: String, into writer: inout WireWriter) {
        writer.json.beginObject()
        writer.json.key("zoneID"); writer.zoneID(zone.zoneName, owner: owner)
        writer.json.key("syncToken"); writer.json.string(zone.syncToken)
        writer.json.key("atomic"); writer.json.bool(zone.zoneName != defaultZoneName)
        writer.json.endObject()
    }

    @Sendable func listZones(_ call: DatabaseCall) async throws -> WireWriter {
        let zones = try await self.records.listZones(in: call.database, logger: call.logger)
        var writer = WireWriter()
        writer.json.beginObject()
        writer.json.key("zones")
        writer.json.beginArray()
        for zone in zones { self.writeZone(zone, owner: call.database.ownerRecordName, into: &writer) }
        writer.json.endArray()
        writer.json.endObject()
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
        writer.json.beginObject()
        writer.json.key("zones")
        writer.json.beginArray()
        for (name, zone) in zip(names, zones) {
            if let zone {
                self.writeZone(zone, owner: owner, into: &writer)
            } else {
                writer.itemError(CloudError(.zoneNotFound, "zone \(name) does not exist"), key: "zoneID", name: name, zone: (name, owner))
            }
        }
        writer.json.endArray()
        writer.json.endObject()
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
        writer.json.beginObject()
        writer.json.key("zones")
        writer.json.beginArray()
        for outcome in outcomes {
            switch outcome {
            case .created(let zone): self.writeZone(zone, owner: owner, into: &writer)
            case .deleted(let name):
                writer.json.beginObject()
                writer.json.key("zoneID"); writer.zoneID(name, owner: owner)
                writer.json.key("deleted"); writer.json.bool(true)
                writer.json.endObject()
            case .failed(let name, let error): writer.itemError(error, key: "zoneID", name: name, zone: (name, owner))
            }
        }
        writer.json.endArray()
        writer.json.endObject()
        return writer
    }

    // MARK: users/*

    func currentUser(_ request: Request, _ context: BasicRequestContext, caller isCaller: Bool) async throws -> Response {
        _ = try self.containerAndEnvironment(context)  // any database segment is accepted here (reference §1)
        return try await withDatabaseDeadline(self.configuration.databaseTimeout) {
            try await self.user(request, logger: context.logger, caller: isCaller)
        }
    }

    func user(_ request: Request, logger: Logger, caller isCaller: Bool) async throws -> Response {
        let caller = try await self.authenticator.caller(for: request, body: ByteBuffer(), logger: logger)
        guard let account = caller.account else {
            throw self.authenticator.authenticationRequired(request, "users/\(isCaller ? "caller" : "current") needs a signed-in user (ckWebAuthToken)")
        }
        var writer = WireWriter()
        writer.json.beginObject()
        if isCaller {
            writer.json.key("users")
            writer.json.beginArray()
            writer.json.beginObject()
        }
        writer.json.key("userRecordName"); writer.json.string(account.userRecordName)
        if isCaller {
            writer.json.key("nameComponents"); writer.json.value(["givenName": .string(account.name)])
            writer.json.key("lookupInfo"); writer.json.value(["userRecordName": .string(account.userRecordName)])
            writer.json.endObject()
            writer.json.endArray()
        } else {
            writer.json.key("firstName"); writer.json.string(account.name)
        }
        writer.json.endObject()
        var response = writer.response()
        response.headers[.webAuthToken] = await self.authenticator.rotatedToken(for: caller, request: request, logger: logger)
        return response
    }
}

