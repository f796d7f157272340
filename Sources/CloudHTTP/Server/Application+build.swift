import CloudAssets
import CloudCore
import CloudRuntime
import CloudPostgres
import Foundation
import Hummingbird
import Logging
import Prometheus
import ServiceLifecycle

/// The live dependencies of a server, built by `ServerDependencies.live` (the one composition root).
/// This build's version, shown by the console and `stadiumcloud --version`.
public let serverVersion = "0.20.0"

public struct ServerDependencies: Sendable {
    public var records: RecordStore
    public var credentials: CredentialStore
    /// The migrations this build expects, for `/ready`.
    public var migrations: [Migration]
    public var assets: any AssetStore
    /// Where `/metrics` reads from (the executable bootstraps swift-metrics with it).
    public var metrics: PrometheusCollectorRegistry

    /// The live parts of a server from its configuration and the database's stores: the record store (loading
    /// the token key, so the client must be running) and the asset store, without the partial uploads a crash or a
    /// day's abandonment left.
    public static func live(
        stores: Stores, configuration: ServerConfiguration, migrations: [Migration],
        metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), logger: Logger
    ) async throws -> ServerDependencies {
        let assets = try openAssetStore(configuration.assets, logger: logger)
        try await assets.removePartialUploads(olderThan: 24 * 3600)
        let records = try await stores.records(feed: ChangeFeed(limits: configuration.live.waiters), logger: logger)
        try await records.adoptGlobalSchema(containers: configuration.containers, logger: logger)
        return ServerDependencies(
            records: records, credentials: stores.credentials,
            migrations: migrations, assets: assets,
            metrics: metrics)
    }
}

/// The router: CloudKit Web Services routes, extension endpoints, `/health`, `/ready` and `/metrics`.
public func buildRouter(configuration: ServerConfiguration, dependencies: ServerDependencies, extensions: ServerExtensions = ServerExtensions())
    -> Router<CloudRequestContext>
{
    let router = Router(context: CloudRequestContext.self)
    let statistics = RequestStatistics(clock: configuration.clock)
    router.add(middleware: RequestLogMiddleware(statistics: statistics))
    router.add(middleware: MetricsMiddleware())
    if !configuration.webOrigins.isEmpty { router.add(middleware: CORSMiddleware(origins: configuration.webOrigins)) }
    router.add(middleware: CompressionMiddleware())
    router.add(middleware: CloudErrorMiddleware())
    OperationsController(dependencies: dependencies).addRoutes(to: router)
    PublicCacheController(records: dependencies.records, configuration: configuration).addRoutes(to: router)
    let capabilities = AssetCapabilities(signer: dependencies.records.signer, history: dependencies.records.history, clock: configuration.clock)
    let credentials = dependencies.credentials
    let share: RateLimiter.Share = { try await credentials.takeFromSharedBuckets($0, logger: Logger(label: "stadiumcloud.ratelimit")) }
    let limiter = RateLimiter(share: configuration.rateLimits.shared ? share : nil, clock: configuration.clock)
    AssetController(store: dependencies.assets, records: dependencies.records, capabilities: capabilities, configuration: configuration).addRoutes(
        to: router)
    SignInController(credentials: dependencies.credentials, configuration: configuration, limiter: limiter).addRoutes(to: router)
    ConsoleController(
        dependencies: dependencies, configuration: configuration, limiter: limiter, statistics: statistics, publicData: extensions.publicData
    ).addRoutes(to: router)
    DatabaseController(
        records: dependencies.records,
        authenticator: RequestAuthenticator(credentials: dependencies.credentials, configuration: configuration, limiter: limiter),
        maxBodyBytes: configuration.maxBodyBytes, assets: dependencies.assets, capabilities: capabilities,
        configuration: configuration, writeRules: extensions.writeRules
    ).addRoutes(to: router, extensions: extensions.endpoints)
    return router
}

/// The whole HTTP server: the router, with the tombstone purge, the asset collector and the extensions' background
/// jobs as its services.
public func buildApplication(
    configuration: ServerConfiguration, dependencies: ServerDependencies, extensions: ServerExtensions = ServerExtensions(), logger: Logger
) -> some ApplicationProtocol {
    let connections = OpenConnectionCount(limits: configuration.connections, placeFreed: configuration.signals.connectionPlaceFreed)
    let (headTimeout, idleTimeout) = (configuration.connections.headTimeout, configuration.connections.idleTimeout)
    return Application(
        router: buildRouter(configuration: configuration, dependencies: dependencies, extensions: extensions),
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [
                    ConnectionGuard(connections: connections, headTimeout: .milliseconds(headTimeout.milliseconds)), ExpectContinueHandler(),
                ],
                idleTimeout: .milliseconds(idleTimeout.milliseconds))),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "StadiumCloud"),
        services: [
            dependencies.records.changes,
            TombstonePurgeService(
                records: dependencies.records, credentials: dependencies.credentials,
                signatureWindowMs: Int64(configuration.auth.signatureWindowSeconds) * 1000, retention: configuration.tombstoneRetention,
                interval: configuration.purgeInterval, clock: configuration.clock, logger: logger),
            AssetCollectorService(
                records: dependencies.records, assets: dependencies.assets, configuration: configuration, logger: logger),
        ] + extensions.backgroundJobs.map(BackgroundJob.init),
        logger: logger)
}

/// An extension's background job as a service of the application: it ends with the server, and a job that is done
/// first (warming a cache) leaves the server running.
struct BackgroundJob: Service {
    let job: @Sendable () async throws -> Void
    func run() async throws {
        try await cancelWhenGracefulShutdown { try await self.job() }
        try? await gracefulShutdown()
    }
}
