import ArgumentParser
import Canon
import CloudHTTP
import CloudPostgres
import CloudRuntime
import Foundation
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the CloudKit Web Services API.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Flag(help: "Apply pending migrations before serving (otherwise pending migrations stop the server).") var migrate = false
    @Option(help: "Days deletions stay in deltas before tombstones are purged.") var tombstoneRetentionDays = 30
    @Option(help: "Seconds between tombstone purges.") var purgeIntervalSeconds = 3600
    @Option(
        help:
            "Where asset bytes live: a folder, or s3://bucket[/prefix]?endpoint=URL&region=R with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (env STADIUMCLOUD_ASSETS)."
    )
    var assets: String?
    @Option(help: "Largest asset accepted, in MB.") var maxAssetMB = 100
    @Option(help: "A container to serve (repeatable).") var container: [String] = ["iCloud.com.sportstime.app"]
    @Option(help: "The public base URL when a proxy terminates TLS (https://sync.example.com), for the URLs handed out.") var publicURL: String?
    @Option(help: "A URL prefix the sign-in page may send tokens to (repeatable), e.g. sportstime://signin.") var signinCallback: [String] = []
    @Option(help: "Seconds SIGTERM waits for in-flight requests and jobs before cancelling them.") var shutdownGraceSeconds = 30
    @Option(help: "Seconds a request may wait for the database before it is answered 503 TRY_AGAIN_LATER.") var databaseTimeoutSeconds = 10
    @Option(help: "Requests per second one account may make (bursts of 10 times that).") var accountRateLimit = 20.0
    @Option(help: "Requests per second one API token (every install of an app together) may make (bursts of 4 times that).")
    var tokenRateLimit = 500.0
    @Flag(inversion: .prefixedNo, help: "Share rate-limit budgets with every process on the database (off: per process, for a single server).")
    var sharedRateLimits = true
    @Option(help: "Longest a changes/wait or web courier poll is held, in seconds.") var maxWaitSeconds = 60
    @Option(help: "Waiting requests (changes/wait, courier polls) one account may hold at once.") var waitersPerAccount = 16
    @Flag(inversion: .prefixedNo, help: "Let writes in development add new record types and fields to its schema (production is always strict).")
    var justInTimeSchema = true

    func run() async throws {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let migrations = try Migration.load(from: self.database.migrations)
        var configuration = ServerConfiguration()
        configuration.host = self.host
        configuration.port = self.port
        configuration.tombstoneRetention = .seconds(self.tombstoneRetentionDays * 24 * 3600)
        configuration.purgeInterval = .seconds(self.purgeIntervalSeconds)
        configuration.assets = self.assets ?? ProcessInfo.processInfo.environment["STADIUMCLOUD_ASSETS"] ?? configuration.assets
        configuration.maxAssetBytes = Int64(self.maxAssetMB) * 1024 * 1024
        configuration.containers = Set(self.container)
        configuration.databaseTimeout = .seconds(self.databaseTimeoutSeconds)
        configuration.publicBaseURL = self.publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        configuration.auth.signInCallbackPrefixes = self.signinCallback
        configuration.rateLimits.perAccount = RateLimit(perSecond: self.accountRateLimit, burst: self.accountRateLimit * 10)
        configuration.rateLimits.shared = self.sharedRateLimits
        configuration.rateLimits.perAPIToken = RateLimit(perSecond: self.tokenRateLimit, burst: self.tokenRateLimit * 4)
        configuration.live.maxWaitSeconds = self.maxWaitSeconds
        configuration.live.courierWaitSeconds = min(configuration.live.courierWaitSeconds, self.maxWaitSeconds)
        configuration.live.waiters.waitersPerAccount = self.waitersPerAccount
        configuration.justInTimeSchema = self.justInTimeSchema
        let live = try Live(self.database, configuration: configuration)
        let server = ServerService(
            stores: live.stores, configuration: configuration, migrations: migrations, applyMigrations: self.migrate, metrics: registry,
            extensions: { CanonicalEndpoints(records: $0).extensions }, logger: live.logger)
        // The client first: a ServiceGroup stops its services in reverse order, so the database goes last.
        var group = ServiceGroupConfiguration(services: [live.client, server], gracefulShutdownSignals: [.sigterm, .sigint], logger: live.logger)
        // SIGTERM stops accepting connections and lets in-flight requests and background jobs finish; whatever
        // is still running after the grace period is cancelled, so a stuck request cannot keep the process up.
        group.maximumGracefulShutdownDuration = .seconds(self.shutdownGraceSeconds)
        try await ServiceGroup(configuration: group).run()
    }
}
