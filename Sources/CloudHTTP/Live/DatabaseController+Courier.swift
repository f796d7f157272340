import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Hummingbird
import NIOCore

/// Push tokens and the web courier (docs/SYNC.md, "Live sync"). `tokens/create` gives a signed-in person a push
/// token and the URL of this server's courier; a client long-polls that URL and gets one CloudKit notification
/// frame per answer (`ck.qry`, `ck.fet`, `ck.met`), or an empty 200 when nothing happened in time. The token is a
/// credential of its own with a lifetime, so polls do not use up the rotating web auth token.
extension DatabaseController {
    func addCourierRoutes(to router: Router<CloudRequestContext>) {
        for group in [router.group("device/1/:container/:environment"), router.group("database/1/:container/:environment/:database")] {
            group.post("tokens/create") { request, context in try await self.run(request, context, self.createPushToken) }
            group.post("tokens/register") { request, context in try await self.run(request, context, self.registerPushToken) }
        }
        router.get("webcourier/aps") { request, context in try await endingWhenTheClientLeaves(context) { try await self.courier(request, context) } }
    }

    @Sendable func createPushToken(_ call: DatabaseCall) async throws -> WireWriter {
        let account = try self.subscriber(call)
        let environment = try call.body.string("apnsEnvironment") ?? call.environment
        guard environment == call.environment else {
            throw CloudError.badRequest("apnsEnvironment \(environment) differs from the URL's environment \(call.environment)")
        }
        let lifetime = Int64(self.configuration.live.pushTokenLifetimeSeconds)
        let databases = [
            try await self.records.database(
                container: call.container, environment: call.environment, scope: .private, owner: account, logger: call.logger),
            try await self.records.database(
                container: call.container, environment: call.environment, scope: .public, owner: nil, logger: call.logger),
        ]
        let created = try await self.records.createCourierToken(
            account: account.id, container: call.container, environment: call.environment, deviceID: call.sentDeviceID,
            lifetimeMs: lifetime * 1000, databases: databases, logger: call.logger)
        var writer = WireWriter()
        writer.object { writer in
            writer.json.key("apnsEnvironment"); writer.json.string(environment)
            writer.json.key("apnsToken"); writer.json.string(created.token)
            writer.json.key("webcourierURL"); writer.json.string("\(call.baseURL)/webcourier/aps?tok=\(created.token)&ttl=\(lifetime)")
        }
        return writer
    }

    /// Registering is binding a token to a person; a token from `tokens/create` already is. An APNs device token
    /// cannot be registered: this server delivers through its courier only.
    @Sendable func registerPushToken(_ call: DatabaseCall) async throws -> WireWriter {
        let account = try self.subscriber(call)
        guard let text = try call.body.string("apnsToken") else { throw CloudError.badRequest("apnsToken is required") }
        guard let token = try await self.records.courierToken(text, logger: call.logger), token.accountID == account.id,
            token.container == call.container, token.environment == call.environment
        else {
            throw CloudError.badRequest(
                "apnsToken is not a push token this server issued to this user here; this server delivers through its web courier: use tokens/create")
        }
        guard token.expiresMs > self.clock.now else { throw Self.expired }
        var writer = WireWriter()
        writer.object { writer in
            writer.json.key("apnsEnvironment"); writer.json.string(token.environment)
            writer.json.key("apnsToken"); writer.json.string(text)
        }
        return writer
    }

    static let expired = CloudError(.authenticationFailed, "the push token has expired; create a new one with tokens/create")

    /// `GET /webcourier/aps?tok=…[&timeout=seconds]`: the token's next notification, waiting for one up to the
    /// timeout (default `LiveConfiguration.courierWaitSeconds`).
    @Sendable func courier(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        guard let text = query["tok"].map(String.init), !text.isEmpty else { throw CloudError.badRequest("tok (the push token) is required") }
        let asked = try query["timeout"].map { text in
            guard let seconds = Int(text) else {
                throw CloudError.badRequest("timeout must be 0 to \(self.configuration.live.maxWaitSeconds) seconds")
            }
            return seconds
        }
        let timeout = try self.waitTimeout(asked: asked, default: self.configuration.live.courierWaitSeconds)
        let logger = context.logger
        let token = try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.clock) {
            try await self.records.courierToken(text, logger: logger)
        }
        guard let token else { throw CourierToken.unknown }
        guard token.expiresMs > self.clock.now else { throw Self.expired }
        let environmentCode = token.environment == "production" ? 2 : 1
        let frame = { @Sendable (notice: ChangeNotice) in
            Self.frame(notice, container: token.container, user: token.userRecordName, environment: environmentCode)
        }
        let found = try await self.waitForChanges(
            in: token.databaseIDs, account: token.accountID, timeout: timeout,
            isEmpty: { $0 == nil }
        ) { () async throws -> String? in
            let subscriptions = try await self.records.subscriptions(
                of: token.accountID, container: token.container, environment: token.environment, logger: logger
            ).compactMap { saved -> ActiveSubscription? in
                // Saved subscriptions were checked when saved; one the schema no longer allows is skipped, not fatal.
                guard let wire = try? WireObject(saved.definition, path: "subscription"),
                    let subscription = try? Subscription(wire: wire, owner: "", schema: nil)
                else { return nil }
                return ActiveSubscription(databaseID: saved.databaseID, scope: saved.scope, sinceSeq: saved.sinceSeq, subscription: subscription)
            }
            return try await self.records.nextNotice(for: token, subscriptions: subscriptions, logger: logger, frame: frame)
        }
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=UTF-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: found ?? "")))
    }

    /// One notification in the shape CloudKit's web courier delivers (captured by MistKit): `aps` and `ck`, with
    /// `qry` for a query subscription, `fet` for a zone and `met` for a database subscription. `dbs` numbers the
    /// database as CloudKit JS reads it: 0 public, 1 private.
    static func frame(_ notice: ChangeNotice, container: String, user: String, environment: Int) -> String {
        let database: Int64 = notice.scope == .public ? 0 : 1
        var body: [String: JSONValue] = ["sid": .string(notice.subscriptionID), "dbs": .int(database)]
        if let zone = notice.zoneName {
            body["zid"] = .string(zone)
            body["zoid"] = .string(notice.scope == .public ? "_defaultOwner" : user)
        }
        if let record = notice.recordName { body["rid"] = .string(record) }
        if let trigger = notice.trigger { body["fo"] = .int(trigger == .create ? 1 : trigger == .update ? 2 : 3) }
        var ck: [String: JSONValue] = [
            "nid": .string(UUID().uuidString.lowercased()), "cid": .string(container), "ckuserid": .string(user), "ce": .int(Int64(environment)),
        ]
        ck[notice.kind == .query ? "qry" : notice.kind == .zone ? "fet" : "met"] = .object(body)
        if notice.pruned { ck["p"] = .bool(true) }
        return JSONWriter.encode(["aps": ["content-available": 1], "ck": .object(ck)])
    }
}
