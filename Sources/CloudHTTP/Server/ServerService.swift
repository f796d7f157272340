import CloudCore
import CloudPostgres
import Logging
import Prometheus
import ServiceLifecycle

/// The server as a service of the process's one `ServiceGroup`, after the PostgreSQL client: its start-up work
/// (the migration gate, the token key, stale partial uploads) runs inside the group, so a SIGTERM during
/// start-up ends the process as gracefully as one while serving.
public struct ServerService: Service {
    let stores: Stores
    let configuration: ServerConfiguration
    let migrations: [Migration]
    /// `serve --migrate`: apply pending migrations instead of refusing to start.
    let applyMigrations: Bool
    let metrics: PrometheusCollectorRegistry
    /// The endpoints layers above the engine add, given the record store.
    let extensions: @Sendable (RecordStore) -> ServerExtensions
    let logger: Logger

    public init(
        stores: Stores, configuration: ServerConfiguration, migrations: [Migration], applyMigrations: Bool,
        metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), extensions: @escaping @Sendable (RecordStore) -> ServerExtensions,
        logger: Logger
    ) {
        self.stores = stores
        self.configuration = configuration
        self.migrations = migrations
        self.applyMigrations = applyMigrations
        self.metrics = metrics
        self.extensions = extensions
        self.logger = logger
    }

    public func run() async throws {
        let dependencies: ServerDependencies
        do {
            dependencies = try await cancelWhenGracefulShutdown { try await self.start() }
        } catch  where Task.isShuttingDownGracefully {
            self.logger.notice("stopped during start-up")
            return
        }
        let app = buildApplication(
            configuration: self.configuration, dependencies: dependencies, extensions: self.extensions(dependencies.records), logger: self.logger)
        try await app.run()
    }

    /// Everything before the first request: refuses pending migrations (or applies them), then builds the
    /// live dependencies.
    public func start() async throws -> ServerDependencies {
        try await self.stores.migrator(self.migrations, logger: self.logger).prepareForServing(apply: self.applyMigrations)
        return try await ServerDependencies.live(
            stores: self.stores, configuration: self.configuration, migrations: self.migrations, metrics: self.metrics, logger: self.logger)
    }
}
