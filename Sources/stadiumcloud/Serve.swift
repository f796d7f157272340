import ArgumentParser
import Canon
import Feeds
import CloudCore
import CloudHTTP
import CloudPostgres
import CloudRuntime
import Crypto
import Foundation
import Metrics
import Prometheus
import ServiceLifecycle
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the CloudKit Web Services API.")

    /// Every default below is the server's own (`ServerConfiguration`), so a flag and the library never disagree.
    private static let defaults = ServerConfiguration()

    @OptionGroup var database: DatabaseOptions
    @Option(help: "Address to listen on.") var host = Self.defaults.host
    @Option(help: "Port to listen on.") var port = Self.defaults.port
    @Flag(help: "Apply pending migrations before serving (otherwise pending migrations stop the server).") var migrate = false
    @Option(help: "Days deletions stay in deltas before tombstones are purged.") var tombstoneRetentionDays = Int(
        Self.defaults.tombstoneRetention.components.seconds / 86_400)
    @Option(help: "Seconds between tombstone purges.") var purgeIntervalSeconds = Int(Self.defaults.purgeInterval.components.seconds)
    @Option(
        help:
            "Where asset bytes live: a folder, or s3://bucket[/prefix]?endpoint=URL&region=R with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (env STADIUMCLOUD_ASSETS)."
    )
    var assets: String?
    @Option(help: "Largest asset accepted, in MB.") var maxAssetMB = Int(Self.defaults.maxAssetBytes / 1024 / 1024)
    @Option(help: "A container to serve (repeatable).") var container = Self.defaults.containers.sorted()
    @Option(help: "The public base URL when a proxy terminates TLS (https://sync.example.com), for the URLs handed out.") var publicURL: String?
    @Option(help: "A URL prefix the sign-in page may send tokens to (repeatable), e.g. sportstime://signin.") var signinCallback: [String] = []
    @Option(help: "The origin of a web app allowed to call the server from a browser (repeatable), e.g. https://www.example.com.")
    var webOrigin: [String] = []
    @Option(help: "Seconds SIGTERM waits for in-flight requests and jobs before cancelling them.") var shutdownGraceSeconds = Int(
        Self.defaults.shutdownGrace.components.seconds)
    @Option(help: "Seconds a request may wait for the database before it is answered 503 TRY_AGAIN_LATER.") var databaseTimeoutSeconds = Int(
        Self.defaults.databaseTimeout.components.seconds)
    @Option(help: "Requests per second one account may make (bursts of \(Int(Self.accountBurst)) times that).")
    var accountRateLimit = Self.defaults.rateLimits.perAccount.perSecond
    @Option(help: "Requests per second one API token (every install of an app together) may make (bursts of \(Int(Self.tokenBurst)) times that).")
    var tokenRateLimit = Self.defaults.rateLimits.perAPIToken.perSecond
    @Flag(inversion: .prefixedNo, help: "Share rate-limit budgets with every process on the database (off: per process, for a single server).")
    var sharedRateLimits = Self.defaults.rateLimits.shared
    @Option(help: "Longest a changes/wait or web courier poll is held, in seconds.") var maxWaitSeconds = Self.defaults.live.maxWaitSeconds
    @Option(help: "Waiting requests (changes/wait, courier polls) one account may hold at once.") var waitersPerAccount = Self.defaults.live.waiters
        .waitersPerAccount
    @Flag(inversion: .prefixedNo, help: "Let writes in development add new record types and fields to its schema (production is always strict).")
    var justInTimeSchema = Self.defaults.justInTimeSchema
    @Option(help: "scrypt cost (log2 N) of new password hashes and of the stand-in hash for unknown names; lower only for tests.")
    var passwordHashCost = Self.defaults.auth.passwordHashLog2Rounds
    @Option(help: "Open connections kept at most; past it a new one is answered 503 (lowered to what the open-file limit allows).")
    var maxConnections = Self.defaults.connections.maximum
    @Option(help: "Seconds from connecting to the end of the first request head before the connection is closed.")
    var headerTimeoutSeconds = Int(Self.defaults.connections.headTimeout.components.seconds)
    @Option(help: "Seconds a connection may send nothing while no request of it is being answered before it is closed.")
    var idleTimeoutSeconds = Int(Self.defaults.connections.idleTimeout.components.seconds)
    @Option(
        help:
            "Open connections one client address (an IPv6 /64) may hold; past it a new one is answered 503 THROTTLED (0: no cap; 127.0.0.1 and ::1, a local proxy's, are not capped)."
    )
    var maxConnectionsPerAddress = Self.defaults.connections.maximumPerAddress
    @Option(
        help:
            "Seconds from a request's head to the end of its body before it is answered 408 and the connection closed (uploads: --upload-deadline-seconds)."
    )
    var bodyDeadlineSeconds = Int(Self.defaults.connections.body.deadline.components.seconds)
    @Option(help: "Bytes a second a request body must average (with 10 s of slack) before it is answered 408 (0: no minimum).")
    var minBodyBytesPerSecond = Self.defaults.connections.body.minimumBytesPerSecond
    @Option(help: "Seconds from an upload's head (/assets/upload, the console's dataset) to the end of its bytes.")
    var uploadDeadlineSeconds = Int(Self.defaults.connections.uploadBody.deadline.components.seconds)
    @Option(help: "Bytes a second an upload must average (with 10 s of slack); a cut upload resumes (0: no minimum).")
    var minUploadBytesPerSecond = Self.defaults.connections.uploadBody.minimumBytesPerSecond
    @Flag(help: "Keep games current from the leagues' score feeds (docs/FEEDS.md); off, the server never calls out.")
    var feeds = false
    @Option(help: "A score provider's base URL, NAME=URL (repeatable; espn, mlb-stats, nhl-web, nba-cdn), e.g. a replay server's.")
    var feedURL: [String] = []
    @Option(help: "An environment whose public database the feeds keep current (repeatable).")
    var feedEnvironment = ["production", "development"]
    @Option(help: "Seconds between polls of a league with a game being played.")
    var feedLiveIntervalSeconds = Int(FeedConfiguration().liveInterval.components.seconds)

    @Option(help: "The snapshot signing key (PEM, stadiumcloud snapshot keygen): signs the answers of the cacheable public reads (docs/SCALING.md).")
    var snapshotKey: String?
    @Option(help: "A snapshot file (stadiumcloud snapshot make) for GET /public/1/CONTAINER/ENVIRONMENT/snapshot.")
    var snapshot: String?

    /// A bucket holds this many seconds of its rate, as the defaults do.
    private static let accountBurst = Self.defaults.rateLimits.perAccount.burst / Self.defaults.rateLimits.perAccount.perSecond
    private static let tokenBurst = Self.defaults.rateLimits.perAPIToken.burst / Self.defaults.rateLimits.perAPIToken.perSecond

    func validate() throws {
        guard (10...20).contains(self.passwordHashCost) else { throw ValidationError("--password-hash-cost must be 10 to 20") }
        for origin in self.webOrigin {
            guard let url = URL(string: origin), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.path.isEmpty, url.query == nil,
                url.fragment == nil, url.user == nil
            else { throw ValidationError("--web-origin \(origin) is not an origin: scheme://host[:port], no path, no trailing slash") }
        }
        for entry in self.feedURL {
            let parts = entry.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, FeedConfiguration().baseURLs[String(parts[0])] != nil, URL(string: String(parts[1]))?.host != nil else {
                throw ValidationError(
                    "--feed-url \(entry) is not NAME=URL with NAME one of \(FeedConfiguration().baseURLs.keys.sorted().joined(separator: ", "))")
            }
        }
        guard self.maxConnections > 0, self.headerTimeoutSeconds > 0, self.idleTimeoutSeconds > 0, self.bodyDeadlineSeconds > 0,
            self.uploadDeadlineSeconds > 0
        else {
            throw ValidationError(
                "--max-connections, --header-timeout-seconds, --idle-timeout-seconds, --body-deadline-seconds and --upload-deadline-seconds must be positive"
            )
        }
        guard self.maxConnectionsPerAddress >= 0, self.minBodyBytesPerSecond >= 0, self.minUploadBytesPerSecond >= 0 else {
            throw ValidationError("--max-connections-per-address, --min-body-bytes-per-second and --min-upload-bytes-per-second must be 0 or more")
        }
    }

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
        configuration.webOrigins = Set(self.webOrigin)
        configuration.rateLimits.perAccount = RateLimit(perSecond: self.accountRateLimit, burst: self.accountRateLimit * Self.accountBurst)
        configuration.rateLimits.shared = self.sharedRateLimits
        configuration.rateLimits.perAPIToken = RateLimit(perSecond: self.tokenRateLimit, burst: self.tokenRateLimit * Self.tokenBurst)
        configuration.live.maxWaitSeconds = self.maxWaitSeconds
        configuration.live.courierWaitSeconds = min(configuration.live.courierWaitSeconds, self.maxWaitSeconds)
        configuration.live.waiters.waitersPerAccount = self.waitersPerAccount
        configuration.justInTimeSchema = self.justInTimeSchema
        configuration.auth.passwordHashLog2Rounds = self.passwordHashCost
        configuration.shutdownGrace = .seconds(self.shutdownGraceSeconds)
        configuration.connections.headTimeout = .seconds(self.headerTimeoutSeconds)
        configuration.connections.idleTimeout = .seconds(self.idleTimeoutSeconds)
        configuration.connections.maximumPerAddress = self.maxConnectionsPerAddress
        configuration.connections.body.deadline = .seconds(self.bodyDeadlineSeconds)
        configuration.connections.body.minimumBytesPerSecond = self.minBodyBytesPerSecond
        configuration.connections.uploadBody.deadline = .seconds(self.uploadDeadlineSeconds)
        configuration.connections.uploadBody.minimumBytesPerSecond = self.minUploadBytesPerSecond
        if let path = self.snapshotKey {
            guard let pem = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
            configuration.publicSnapshots.signingKey = try P256.Signing.PrivateKey(pemRepresentation: String(decoding: pem, as: UTF8.self))
        }
        configuration.publicSnapshots.file = self.snapshot
        let feeds = self.feeds ? self.feedConfiguration(containers: configuration.containers) : nil
        let clock = configuration.clock
        let containers = configuration.containers
        let live = try Live(self.database, configuration: configuration)
        configuration.connections.maximum = self.maxConnections
        configuration.connections = OpenFiles.raiseLimit(configuration.connections, logger: live.logger)
        let server = ServerService(
            stores: live.stores, configuration: configuration, migrations: migrations, applyMigrations: self.migrate, metrics: registry,
            extensions: { records in
                let canonical = CanonicalEndpoints(records: records)
                var extensions = canonical.extensions
                extensions.backgroundJobs.append {
                    await canonical.warm(containers: containers, environments: ["production", "development"], logger: live.logger)
                }
                if let feeds {
                    let poller = FeedPoller(records: records, canonical: canonical, configuration: feeds, clock: clock, logger: live.logger)
                    extensions.backgroundJobs.append { try await poller.run() }
                }
                return extensions
            }, logger: live.logger)
        // The client first: a ServiceGroup stops its services in reverse order, so the database goes last.
        var group = ServiceGroupConfiguration(services: [live.client, server], gracefulShutdownSignals: [.sigterm, .sigint], logger: live.logger)
        // SIGTERM stops accepting connections and lets in-flight requests and background jobs finish; whatever
        // is still running after the grace period is cancelled, so a stuck request cannot keep the process up.
        group.maximumGracefulShutdownDuration = configuration.shutdownGrace
        try await ServiceGroup(configuration: group).run()
    }

    /// The feeds' configuration from `--feed-url` and `--feed-environment`.
    func feedConfiguration(containers: Set<String>) -> FeedConfiguration {
        var feeds = FeedConfiguration()
        for entry in self.feedURL {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            feeds.baseURLs[parts[0]] = parts[1].hasSuffix("/") ? String(parts[1].dropLast()) : parts[1]
        }
        feeds.liveInterval = .seconds(max(1, self.feedLiveIntervalSeconds))
        feeds.targets = containers.sorted().flatMap { container in self.feedEnvironment.map { (container, $0) } }
        return feeds
    }
}
