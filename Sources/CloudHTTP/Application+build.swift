import CloudAssets
import CloudCore
import CloudPostgres
import Foundation
import Hummingbird
import Logging
import PostgresNIO
import Prometheus
import ServiceLifecycle

/// The live dependencies of a server; the executable builds them, tests build them against their own database.
public struct ServerDependencies: Sendable {
    public var client: PostgresClient
    public var records: RecordStore
    public var credentials: CredentialStore
    public var migrations: [Migration]
    public var assets: any AssetStore
    /// Where `/metrics` reads from (the executable bootstraps swift-metrics with it).
    public var metrics: PrometheusCollectorRegistry

    /// Loads the token signing key (the client must be running).
    public init(
        client: PostgresClient, migrations: [Migration], assets: any AssetStore,
        metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), limits: RecordLimits = RecordLimits(),
        passwordHashLog2Rounds: Int = 15, logger: Logger
    ) async throws {
        self.assets = assets
        self.client = client
        self.credentials = CredentialStore(client: client, hasher: PasswordHasher(log2Rounds: passwordHashLog2Rounds))
        let key = try await self.credentials.tokenSigningKey(logger: logger)
        self.records = RecordStore(client: client, signer: TokenSigner(key: key), limits: limits)
        self.migrations = migrations
        self.metrics = metrics
    }
}

/// An extension endpoint under `/database/1/{container}/{environment}/{database}/{path}` (POST): it gets the parsed
/// body and the resolved database and returns the JSON to answer. Authentication and errors are the same as for
/// the CloudKit endpoints; it may only read.
public struct ExtensionEndpoint: Sendable {
    public var path: String
    public var handler: @Sendable (_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue

    public init(path: String, handler: @escaping @Sendable (_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue) {
        self.path = path
        self.handler = handler
    }
}

/// The router: CloudKit Web Services routes, extension endpoints, `/health`, `/ready` and `/metrics`.
public func buildRouter(configuration: ServerConfiguration, dependencies: ServerDependencies, extensions: [ExtensionEndpoint] = []) -> Router<BasicRequestContext> {
    let router = Router()
    router.add(middleware: RequestLogMiddleware())
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: CloudErrorMiddleware())
    OperationsController(dependencies: dependencies).addRoutes(to: router)
    let capabilities = AssetCapabilities(signer: dependencies.records.signer)
    let limiter = RateLimiter()
    AssetController(store: dependencies.assets, records: dependencies.records, capabilities: capabilities, configuration: configuration).addRoutes(to: router)
    SignInController(credentials: dependencies.credentials, configuration: configuration, limiter: limiter).addRoutes(to: router)
    DatabaseController(
        records: dependencies.records,
        authenticator: RequestAuthenticator(credentials: dependencies.credentials, configuration: configuration, limiter: limiter),
        maxBodyBytes: configuration.maxBodyBytes, assets: dependencies.assets, capabilities: capabilities,
        configuration: configuration
    ).addRoutes(to: router, extensions: extensions)
    return router
}

/// The whole server: the router, and the tombstone purge job as a service (the database client runs outside).
public func buildApplication(
    configuration: ServerConfiguration, dependencies: ServerDependencies, extensions: [ExtensionEndpoint] = [], logger: Logger
) -> some ApplicationProtocol {
    Application(
        router: buildRouter(configuration: configuration, dependencies: dependencies, extensions: extensions),
        server: .http1(configuration: .init(additionalChannelHandlers: [ExpectContinueHandler()])),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "StadiumCloud"),
        services: [
            TombstonePurgeService(
                records: dependencies.records, credentials: dependencies.credentials,
                signatureWindowMs: Int64(configuration.auth.signatureWindowSeconds) * 1000, retention: configuration.tombstoneRetention,
                interval: configuration.purgeInterval, logger: logger),
            AssetCollectorService(
                records: dependencies.records, assets: dependencies.assets, configuration: configuration, logger: logger),
        ],
        logger: logger)
}

/// `/health` (the process is up), `/ready` (database reachable, migrations current), `/metrics` (Prometheus) and
/// `/openapi.yaml` (the API description).
struct OperationsController: Sendable {
    let dependencies: ServerDependencies

    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("health") { _, _ in Self.json(["status": "ok"]) }
        router.get("ready") { _, context in
            do {
                let (client, migrations, logger) = (self.dependencies.client, self.dependencies.migrations, context.logger)
                // A probe must answer quickly, database or not.
                let pending = try await withDatabaseDeadline(.seconds(2)) {
                    try await Migrator(client: client, migrations: migrations, logger: logger).pending()
                }
                guard pending.isEmpty else {
                    return Self.json(["status": "migrations pending", "pending": .array(pending.map { .int(Int64($0.version)) })], status: .serviceUnavailable)
                }
                return Self.json(["status": "ready"])
            } catch {
                context.logger.warning("readiness check failed: \(String(reflecting: error))")
                return Self.json(["status": "database unavailable"], status: .serviceUnavailable)
            }
        }
        router.get("openapi.yaml") { _, _ in
            guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"), let spec = FileManager.default.contents(atPath: url.path) else {
                throw CloudError.notFound("openapi.yaml is not installed next to the server binary")
            }
            return Response(status: .ok, headers: [.contentType: "application/yaml"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: spec)))
        }
        router.get("metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.dependencies.metrics.emitToBuffer())))
        }
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: JSONWriter.encode(value))))
    }
}

/// Removes tombstones older than the retention, credentials that can no longer be used and idempotency answers
/// older than a day, on an interval.
struct TombstonePurgeService: Service {
    let records: RecordStore
    let credentials: CredentialStore
    let signatureWindowMs: Int64
    let retention: Duration
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await runPeriodically(every: self.interval) {
            let cutoff = Timestamp.now - Int64(self.retention.components.seconds * 1000)
            do {
                let purged = try await self.records.purgeTombstones(olderThanMs: cutoff, logger: self.logger)
                try await self.credentials.purgeExpired(signatureWindowMs: self.signatureWindowMs, logger: self.logger)
                try await self.records.purgeIdempotentWrites(olderThanMs: Timestamp.now - 86_400_000, logger: self.logger)
                self.logger.info("purged tombstones", metadata: ["records": "\(purged.records)", "zones": "\(purged.zones)"])
            } catch {
                self.logger.error("tombstone purge failed: \(String(reflecting: error))")
            }
        }
    }
}

/// Runs `job` every `interval` until graceful shutdown. Shutdown cancels the wait, never a job in progress: a
/// job that has started finishes before the process exits (within `serve --shutdown-grace-seconds`).
func runPeriodically(every interval: Duration, _ job: () async -> Void) async {
    while !Task.isShuttingDownGracefully, !Task.isCancelled {
        do {
            try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        } catch {
            return
        }
        await job()
    }
}


/// Removes asset bytes no record references once they are older than the grace period, and partial uploads
/// abandoned for a day.
struct AssetCollectorService: Service {
    let records: RecordStore
    let assets: any AssetStore
    let configuration: ServerConfiguration
    let logger: Logger

    func run() async throws {
        await runPeriodically(every: self.configuration.assetCollectionInterval) {
            do {
                try await self.collect()
            } catch {
                self.logger.error("asset collection failed: \(String(reflecting: error))")
            }
        }
    }

    func collect() async throws {
        let cutoff = Timestamp.now - Int64(self.configuration.unreferencedAssetGraceSeconds) * 1000
        let removed = try await self.records.collectUnreferencedAssets(storedBeforeMs: cutoff, logger: self.logger) { databaseID, checksum in
            try await self.assets.remove(owner: assetOwner(databaseID: databaseID), checksum: checksum)
        }
        let partials = try await self.assets.removePartialUploads(olderThan: 24 * 3600)
        // Bytes a crash left between publishing and committing their row (docs/RELIABILITY.md).
        let old = try await self.assets.blobs(olderThan: Double(self.configuration.unreferencedAssetGraceSeconds))
        let orphans = try await self.records.collectOrphanBlobs(
            old.compactMap { blob in databaseID(ofAssetOwner: blob.owner).map { ($0, blob.checksum) } }, logger: self.logger
        ) { databaseID, checksum in
            try await self.assets.remove(owner: assetOwner(databaseID: databaseID), checksum: checksum)
        }
        self.logger.info("collected assets", metadata: ["blobs": "\(removed)", "partials": "\(partials)", "orphans": "\(orphans)"])
    }
}
