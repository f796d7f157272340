import CloudAssets
import CloudCore
import CloudRuntime
import CloudPostgres
import Crypto
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore

/// Everything a database operation needs about its request.
struct DatabaseCall: Sendable {
    /// The device stamped on what this request writes.
    var deviceID: String { self.sentDeviceID ?? "StadiumCloud" }
    var body: WireObject
    var database: DatabaseRef
    var caller: Caller
    var logger: Logger
    /// The device id the client sent (`X-StadiumCloud-Device-ID`), if it did.
    var sentDeviceID: String?
    /// `http://host:port` as the client reached us, for the absolute URLs we hand out.
    var baseURL: String
    var container: String
    var environment: String
    /// Extension: the `Idempotency-Key` header of a write, with a hash of the request it names.
    var idempotencyKey: (key: String, requestHash: Data)?
}

/// The CloudKit Web Services routes under `/database/1/{container}/{environment}/{database}/…`: the route table
/// and the request plumbing here, each endpoint family in its own file (`DatabaseController+Records` and so on).
struct DatabaseController: Sendable {
    let records: RecordStore
    let authenticator: RequestAuthenticator
    let maxBodyBytes: Int
    let assets: any AssetStore
    let capabilities: AssetCapabilities
    let configuration: ServerConfiguration
    /// The sports layer's checks on saved records (nil: none).
    let writeRules: (any WriteRules)?
    var clock: ServerClock { self.configuration.clock }
    let recordsWritten = Counter(label: "stadiumcloud_records_written_total")
    let recordsServed = Counter(label: "stadiumcloud_change_records_served_total")

    func addRoutes(to router: Router<CloudRequestContext>, extensions: [ExtensionEndpoint] = []) {
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
        group.post("records/modify") { request, context in try await self.run(request, context, writes: .byRole, self.modify) }
        group.post("records/lookup") { request, context in try await self.run(request, context, self.lookup) }
        group.post("records/query") { request, context in try await self.run(request, context, self.query) }
        group.post("records/changes") { request, context in try await self.run(request, context, self.recordChanges) }
        group.post("changes/zone") { request, context in try await self.run(request, context, self.zoneChanges) }
        group.post("changes/database") { request, context in try await self.run(request, context, self.databaseChanges) }
        group.post("zones/changes") { request, context in try await self.run(request, context, self.databaseChanges) }
        group.post("changes/wait") { request, context in try await self.run(request, context, waits: true, self.waitForChanges) }
        group.get("zones/list") { request, context in try await self.run(request, context, self.listZones) }
        group.post("zones/lookup") { request, context in try await self.run(request, context, self.lookupZones) }
        group.post("zones/modify") { request, context in try await self.run(request, context, writes: .byRole, self.modifyZones) }
        group.post("assets/upload") { request, context in try await self.run(request, context, writes: .operators, self.requestUploads) }
        group.post("assets/rereference") { request, context in try await self.run(request, context, writes: .operators, self.rereference) }
        group.get("users/current") { request, context in try await self.currentUser(request, context, caller: false) }
        group.get("users/caller") { request, context in try await self.currentUser(request, context, caller: true) }
        group.post("users/delete") { request, context in try await self.run(request, context, self.deleteAccount) }
        group.post("users/export") { request, context in try await self.respond(request, context, self.exportAccount) }
        group.get("subscriptions/list") { request, context in try await self.run(request, context, self.listSubscriptions) }
        group.post("subscriptions/list") { request, context in try await self.run(request, context, self.listSubscriptions) }
        group.post("subscriptions/lookup") { request, context in try await self.run(request, context, self.lookupSubscriptions) }
        group.post("subscriptions/modify") { request, context in try await self.run(request, context, self.modifySubscriptions) }
        self.addCourierRoutes(to: router)
        for unsupported in ["records/resolve", "records/accept", "users/discover", "users/lookup/email", "users/lookup/id"] {
            group.on(RouterPath(unsupported), method: .post) { _, _ -> Response in throw Self.unsupported(unsupported) }
            group.on(RouterPath(unsupported), method: .get) { _, _ -> Response in throw Self.unsupported(unsupported) }
        }
    }

    static func unsupported(_ path: String) -> CloudError {
        .badRequest("\(path) is not supported by this server")
    }

    // MARK: Request plumbing

    /// Who may use a public-database endpoint that writes.
    enum PublicWriters {
        /// Server-to-server keys only (zones, assets).
        case operators
        /// Also signed-in people, as far as each record type's permissions allow (`records/modify`) or as unlisted
        /// zones are open to them (`zones/modify`).
        case byRole
    }

    /// Authenticates, resolves the database, parses the body, runs `operation` and answers its JSON.
    /// A request that `waits` (a long poll) answers without rotating the web auth token: it is held for up to a
    /// minute while the device's other requests rotate it, and its successor would arrive stale (docs/AUTH.md).
    func run(
        _ request: Request, _ context: CloudRequestContext, writes: PublicWriters? = nil, waits: Bool = false,
        _ operation: @escaping @Sendable (DatabaseCall) async throws -> WireWriter
    ) async throws -> Response {
        try await self.respond(request, context, writes: writes, waits: waits) { try await operation($0).response() }
    }

    /// `run` for an operation that makes its own response (a stream that is not JSON).
    func respond(
        _ request: Request, _ context: CloudRequestContext, writes: PublicWriters? = nil, waits: Bool = false,
        _ operation: @escaping @Sendable (DatabaseCall) async throws -> Response
    ) async throws -> Response {
        var streaming = request
        let logger = context.logger
        let (container, environment) = try self.containerAndEnvironment(context)
        // `/device/1/{container}/{environment}/tokens/…` has no database: push tokens are a signed-in person's.
        let scopeName = context.parameters.get("database") ?? DatabaseScope.private.rawValue
        guard let scope = DatabaseScope(rawValue: scopeName) else {
            throw CloudError.badRequest(
                scopeName == "shared" ? "the shared database is not supported by this server" : "database must be public or private, not \(scopeName)"
            )
        }
        // The body comes first: a server-to-server signature covers it.
        let bytes: ByteBuffer
        do {
            bytes = request.method == .post ? try await streaming.collectBody(upTo: self.maxBodyBytes) : ByteBuffer()
        } catch is NIOTooManyBytesError {
            throw CloudError.badRequest("the request body is larger than \(self.maxBodyBytes) bytes; split the request")
        }
        let prepare = { @Sendable in
            try await self.prepare(
                request, bytes: bytes, container: container, environment: environment, scope: scope, writes: writes, logger: logger)
        }
        if waits {
            // Held longer than any database deadline: only its database work (here and in `operation`) is under one.
            let call = try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.clock, prepare)
            return try await endingWhenTheClientLeaves(context) { try await operation(call) }
        }
        return try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.clock) {
            let call = try await prepare()
            var response = try await operation(call)
            response.headers[.webAuthToken] = await self.authenticator.rotatedToken(for: call.caller, request: request, logger: logger)
            return response
        }
    }

    /// Everything from authentication to the call: who asks, which database, the parsed body.
    private func prepare(
        _ request: Request, bytes: ByteBuffer, container: String, environment: String, scope: DatabaseScope, writes: PublicWriters?,
        logger: Logger
    ) async throws -> DatabaseCall {
        let caller = try await self.authenticator.caller(for: request, body: bytes, logger: logger)
        if scope == .private {
            guard caller.serverKeyID == nil else { throw CloudError.accessDenied("server-to-server keys reach the public database only") }
            guard caller.account != nil else {
                throw self.authenticator.authenticationRequired(request, "the private database needs a signed-in user (ckWebAuthToken)")
            }
        }
        if scope == .public, let writes, caller.serverKeyID == nil, writes == .operators || caller.account == nil {
            throw CloudError.accessDenied(
                writes == .operators
                    ? "this public database endpoint needs a server-to-server key (stadiumcloud keys add)"
                    : "writing the public database needs a signed-in person (for record types whose permissions let people) or a server-to-server key"
            )
        }
        let body = bytes.readableBytes == 0 ? JSONValue.object([:]) : try JSONValue.parse(bytes.readableBytesView)
        let database = try await self.records.database(
            container: container, environment: environment, scope: scope,
            owner: scope == .private ? caller.account : nil, logger: logger)
        var call = DatabaseCall(
            body: try WireObject(body, path: ""), database: database, caller: caller, logger: logger,
            sentDeviceID: request.headers[.deviceID],
            baseURL: baseURL(of: request, self.configuration), container: container,
            environment: environment)
        if let key = request.headers[.idempotencyKey] {
            try FieldName.validate(key, path: "header", what: "Idempotency-Key")
            call.idempotencyKey = (key, Data(SHA256.hash(data: Array(request.uri.path.utf8) + Array(bytes.readableBytesView))))
        }
        return call
    }

    func containerAndEnvironment(_ context: CloudRequestContext) throws -> (container: String, environment: String) {
        try servedContainerAndEnvironment(context, self.configuration)
    }

    /// The signed-in person writing the public database (nil: an operator, or the private database), after taking
    /// `count` writes from their public-writes budget (THROTTLED beyond it).
    func publicWriter(_ call: DatabaseCall, writing count: Int) throws -> Account? {
        guard call.database.scope == .public, call.caller.serverKeyID == nil, let person = call.caller.account else { return nil }
        for _ in 0..<count {
            try self.authenticator.limiter.take(
                RateLimitKeys.publicWrites(person.id), self.configuration.rateLimits.publicWritesPerAccount, what: "account's public records")
        }
        return person
    }

    /// The public record types this caller may not read: those whose permissions say `read: authenticated`, when
    /// asked without a signed-in person or a server-to-server key. Asked only when records are to be answered, so
    /// an empty poll costs nothing more.
    func unreadableTypes(_ call: DatabaseCall) async throws -> Set<String> {
        guard call.database.scope == .public, call.caller.account == nil, call.caller.serverKeyID == nil,
            let schema = try await self.records.deployedSchema(
                in: SchemaScope(container: call.container, environment: call.environment), logger: call.logger)
        else { return [] }
        return schema.readableOnlySignedIn
    }

    /// Reads the zone of a request; a zone owned by someone else is indistinguishable from a missing one.
    func zone(_ object: WireObject, in call: DatabaseCall) throws -> String {
        let (name, owner) = try object.zoneName()
        if call.database.scope == .private, let owner, owner != call.database.ownerRecordName, !["__defaultOwner__", "_defaultOwner"].contains(owner)
        {
            throw CloudError(.zoneNotFound, "zone \(name) does not exist")
        }
        return name
    }

    /// A response writer for `call`: its `numbersAsStrings`, and signed download URLs for the assets answered.
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
}

/// The URL's container (one this server serves) and environment.
func servedContainerAndEnvironment(_ context: CloudRequestContext, _ configuration: ServerConfiguration) throws -> (container: String, environment: String) {
    let environment = try context.parameters.require("environment")
    guard environment == "development" || environment == "production" else {
        throw CloudError.badRequest("environment must be development or production, not \(environment)")
    }
    let container = try context.parameters.require("container")
    guard configuration.containers.contains(container) else { throw CloudError.notFound("container \(container) is not served here") }
    return (container, environment)
}
