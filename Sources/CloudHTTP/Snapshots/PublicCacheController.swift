import CloudCore
import CloudPostgres
import CloudRuntime
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Reads of the public database that any cache may keep (docs/SCALING.md, "Caches in front"), beside the
/// CloudKit-shaped POSTs: GETs with no credentials, the same answer for every device that asks the same URL.
/// - `versions`: each listed zone's last change and purge horizon, and the database history; short-lived. A device
///   told of a new version (a push, a `changes/wait`) asks `versions?_expected=<it>`, a URL no cache holds yet.
/// - `changes/<zone>?from=A&to=B&history=H`: the zone's changes numbered after A up to B. Its answer never needs to
///   change (`immutable`): a record changed again later is in a later range, which the device asks next.
/// - `snapshot`: the signed snapshot the operator made, where an expired position is sent.
/// Always 200 on success, never 304 (a cache's revalidations cost more than they save). With a signing key, every
/// answer carries `X-StadiumCloud-Signature: <key id> <base64 ECDSA P-256 signature of the body>`, so a device trusts the
/// bytes, not the cache.
struct PublicCacheController: Sendable {
    let records: RecordStore
    let configuration: ServerConfiguration
    static let signature = HTTPField.Name("X-StadiumCloud-Signature")!
    /// A range answer holds at most this many changes; `end` says where it stopped.
    static let rangeLimit = 1000

    func addRoutes(to router: Router<CloudRequestContext>) {
        let group = router.group("public/1/:container/:environment")
        group.get("versions") { request, context in try await self.versions(request, context) }
        group.get("changes/:zone") { request, context in try await self.changes(request, context) }
        group.get("snapshot") { _, _ in try await self.snapshot() }
    }

    func versions(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        let database = try await self.database(context)
        let versions = try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.configuration.clock) {
            try await self.records.zoneVersions(in: database, logger: context.logger)
        }
        var json = JSONWriter(capacity: 64 + 80 * versions.count)
        json.object { json in
            json.key("history"); json.int(self.records.history.epoch?.id ?? 0)
            json.key("zones")
            json.array { json in
                for version in versions {
                    json.object { json in
                        json.key("zoneName"); json.string(version.zoneName)
                        json.key("head"); json.int(version.head)
                        json.key("horizon"); json.int(version.horizon)
                    }
                }
            }
        }
        return try self.answer(json.bytes, cacheControl: "public, max-age=10")
    }

    func changes(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        let database = try await self.database(context)
        let zone = try context.parameters.require("zone")
        let query = request.uri.queryParameters
        guard let from = query["from"].flatMap({ Int64(String($0)) }), let to = query["to"].flatMap({ Int64(String($0)) }),
            let history = query["history"].flatMap({ Int64(String($0)) })
        else { throw CloudError.badRequest("from, to and history are required: numbers from the versions document") }
        // Positions of another history (before a restore or failover) name other changes: start again from the snapshot.
        guard self.records.history.isCurrent(history) else { return try self.expired(context) }
        let logger = context.logger
        let range: (records: [RecordSnapshot], end: Int64)
        do {
            range = try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.configuration.clock) {
                try await self.records.changes(zoneName: zone, after: from, upTo: to, limit: Self.rangeLimit, in: database, logger: logger)
            }
        } catch let error as CloudError where error.code == .changeTokenExpired {
            return try self.expired(context)
        }
        let hidden = try await self.hiddenTypes(context)
        var writer = WireWriter()
        writer.object { writer in
            writer.json.key("zoneName"); writer.json.string(zone)
            writer.json.key("from"); writer.json.int(from)
            writer.json.key("to"); writer.json.int(to)
            writer.json.key("end"); writer.json.int(range.end)
            writer.list("records") { writer in
                for record in range.records {
                    // A type only signed-in people may read is answered as gone: a device that had it drops it.
                    var shown = record
                    if hidden.contains(record.recordType) { shown.deleted = true }
                    writer.record(shown, zoneName: zone, owner: "_defaultOwner")
                }
            }
        }
        return try self.answer(writer.json.bytes, cacheControl: "public, max-age=31536000, immutable")
    }

    func snapshot() async throws -> Response {
        guard let path = self.configuration.publicSnapshots.file else {
            throw CloudError.notFound("this server has no snapshot (serve --snapshot FILE)")
        }
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw CloudError(.tryAgainLater, "the snapshot file cannot be read now", retryAfter: 60)
        }
        return Response(
            status: .ok, headers: [.contentType: "application/octet-stream", .cacheControl: "public, max-age=300"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A position the server can no longer answer from (purged tombstones, another history): to the snapshot when
    /// there is one, else CHANGE_TOKEN_EXPIRED (the device then fetches the zone whole with `changes/zone`).
    func expired(_ context: CloudRequestContext) throws -> Response {
        guard self.configuration.publicSnapshots.file != nil else { throw CloudError.changeTokenExpired }
        let location = "/public/1/\(try context.parameters.require("container"))/\(try context.parameters.require("environment"))/snapshot"
        return Response(status: .seeOther, headers: [.location: location, .cacheControl: "public, max-age=60"])
    }

    func database(_ context: CloudRequestContext) async throws -> DatabaseRef {
        let (container, environment) = try servedContainerAndEnvironment(context, self.configuration)
        return try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.configuration.clock) {
            try await self.records.database(container: container, environment: environment, scope: .public, owner: nil, logger: context.logger)
        }
    }

    /// Record types whose permissions say `read: authenticated`: never in an answer any cache may give anyone.
    func hiddenTypes(_ context: CloudRequestContext) async throws -> Set<String> {
        let (container, environment) = try servedContainerAndEnvironment(context, self.configuration)
        let schema = try await self.records.deployedSchema(in: SchemaScope(container: container, environment: environment), logger: context.logger)
        return schema?.readableOnlySignedIn ?? []
    }

    func answer(_ body: [UInt8], cacheControl: String) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8", .cacheControl: cacheControl]
        if let key = self.configuration.publicSnapshots.signingKey {
            headers[Self.signature] = "\(PublicSnapshot.keyID(of: key.publicKey)) \(try key.signature(for: body).derRepresentation.base64EncodedString())"
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
