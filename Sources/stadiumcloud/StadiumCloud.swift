import ArgumentParser
import Canon
import CloudAssets
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import Logging
import Metrics
import PostgresNIO
import Prometheus
import ServiceLifecycle

@main
struct StadiumCloud: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stadiumcloud",
        abstract: "A CloudKit Web Services-compatible sync server on PostgreSQL.",
        subcommands: [Serve.self, Migrate.self, SchemaCommand.self, Import.self, Accounts.self, Tokens.self, Keys.self, Tombstones.self])
}

/// Options every command that talks to the database shares.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "postgres://user:password@host:port/database (env STADIUMCLOUD_DATABASE_URL or DATABASE_URL)")
    var databaseURL: String?

    @Option(help: "Folder of NNNN_name.sql migrations.")
    var migrations = "migrations"

    @Option(help: "trace, debug, info, notice, warning, error or critical (env LOG_LEVEL).")
    var logLevel: String?

    var logger: Logger {
        var logger = Logger(label: "stadiumcloud")
        logger.logLevel = (self.logLevel ?? ProcessInfo.processInfo.environment["LOG_LEVEL"]).flatMap(Logger.Level.init(rawValue:)) ?? .info
        return logger
    }

    func url() throws -> DatabaseURL {
        let environment = ProcessInfo.processInfo.environment
        guard let text = self.databaseURL ?? environment["STADIUMCLOUD_DATABASE_URL"] ?? environment["DATABASE_URL"] else {
            throw ValidationError("no database: pass --database-url or set STADIUMCLOUD_DATABASE_URL (scripts/run starts a local PostgreSQL)")
        }
        return try DatabaseURL(text)
    }

    /// Runs `body` with a running PostgreSQL client, shut down afterwards.
    func withClient<Result: Sendable>(_ body: (PostgresClient, Logger) async throws -> Result) async throws -> Result {
        let logger = self.logger
        return try await withPostgresClient(try self.url(), logger: logger) { client in try await body(client, logger) }
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the CloudKit Web Services API.")

    @OptionGroup var database: DatabaseOptions
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8080
    @Flag(help: "Apply pending migrations before serving (otherwise pending migrations stop the server).") var migrate = false
    @Option(help: "Days deletions stay in deltas before tombstones are purged.") var tombstoneRetentionDays = 30
    @Option(help: "Seconds between tombstone purges.") var purgeIntervalSeconds = 3600
    @Option(help: "Folder for asset bytes (env STADIUMCLOUD_ASSETS).") var assets: String?
    @Option(help: "Largest asset accepted, in MB.") var maxAssetMB = 100
    @Option(help: "A container to serve (repeatable).") var container: [String] = ["iCloud.com.sportstime.app"]
    @Option(help: "The public base URL when a proxy terminates TLS (https://sync.example.com), for the URLs handed out.") var publicURL: String?
    @Option(help: "A URL prefix the sign-in page may send tokens to (repeatable), e.g. sportstime://signin.") var signinCallback: [String] = []
    @Option(help: "Seconds SIGTERM waits for in-flight requests and jobs before cancelling them.") var shutdownGraceSeconds = 30
    @Option(help: "Seconds a request may wait for the database before it is answered 503 TRY_AGAIN_LATER.") var databaseTimeoutSeconds = 10
    @Option(help: "Requests per second one account may make (bursts of 10 times that).") var accountRateLimit = 20.0
    @Option(help: "Requests per second one API token (every install of an app together) may make (bursts of 4 times that).")
    var tokenRateLimit = 500.0

    func run() async throws {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let migrations = try Migration.load(from: self.database.migrations)
        var configuration = ServerConfiguration()
        configuration.host = self.host
        configuration.port = self.port
        configuration.tombstoneRetention = .seconds(self.tombstoneRetentionDays * 24 * 3600)
        configuration.purgeInterval = .seconds(self.purgeIntervalSeconds)
        configuration.assetsPath = self.assets ?? ProcessInfo.processInfo.environment["STADIUMCLOUD_ASSETS"] ?? configuration.assetsPath
        configuration.maxAssetBytes = Int64(self.maxAssetMB) * 1024 * 1024
        configuration.containers = Set(self.container)
        configuration.databaseTimeout = .seconds(self.databaseTimeoutSeconds)
        configuration.publicBaseURL = self.publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        configuration.auth.signInCallbackPrefixes = self.signinCallback
        configuration.rateLimits.perAccount = RateLimit(perSecond: self.accountRateLimit, burst: self.accountRateLimit * 10)
        configuration.rateLimits.perAPIToken = RateLimit(perSecond: self.tokenRateLimit, burst: self.tokenRateLimit * 4)
        let assetStore = try FileAssetStore(root: configuration.assetsPath)
        // Partial uploads left by a crash or abandoned for a day are dropped on start.
        try await assetStore.removePartialUploads(olderThan: 24 * 3600)
        try await self.database.withClient { [configuration, assetStore] client, logger in
            let migrator = Migrator(client: client, migrations: migrations, logger: logger)
            if self.migrate {
                try await migrator.migrate()
            } else if case let pending = try await migrator.pending(), !pending.isEmpty {
                throw ValidationError(
                    "\(pending.count) pending migration(s) (\(pending.map { "\($0.version)_\($0.name)" }.joined(separator: ", "))): run `stadiumcloud migrate up` or pass --migrate")
            }
            let dependencies = try await ServerDependencies(
                client: client, migrations: migrations, assets: assetStore, metrics: registry, limits: configuration.limits, logger: logger)
            let app = buildApplication(
                configuration: configuration, dependencies: dependencies,
                extensions: CanonicalEndpoints(records: dependencies.records).endpoints, logger: logger)
            var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
            // SIGTERM stops accepting connections and lets in-flight requests and background jobs finish; whatever
            // is still running after the grace period is cancelled, so a stuck request cannot keep the process up.
            group.maximumGracefulShutdownDuration = .seconds(self.shutdownGraceSeconds)
            try await ServiceGroup(configuration: group).run()
        }
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply or list schema migrations.", subcommands: [Up.self, Status.self])

    struct Up: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Apply every pending migration, in order.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let migrations = try Migration.load(from: self.database.migrations)
            let applied = try await self.database.withClient { client, logger in
                try await Migrator(client: client, migrations: migrations, logger: logger).migrate()
            }
            print(applied.isEmpty ? "Database is up to date." : "Applied migrations \(applied.map(String.init).joined(separator: ", ")).")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List migrations and whether each is applied.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let migrations = try Migration.load(from: self.database.migrations)
            let statuses = try await self.database.withClient { client, logger in
                try await Migrator(client: client, migrations: migrations, logger: logger).status()
            }
            for status in statuses { print(String(format: "%04d", status.version), status.name, status.state.rawValue) }
        }
    }
}

struct Accounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage accounts.", subcommands: [Create.self, Password.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account; prints its user record name and a web auth token (a 2-week, keep-signed-in session).")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "A unique account name (what the person signs in with).") var name: String
        @Flag(help: "Read a password from standard input, so the person can also sign in at /signin.") var passwordStdin = false

        func run() async throws {
            let password = self.passwordStdin ? try readPassword() : nil
            let (account, token) = try await self.database.withClient { client, logger in
                try await CredentialStore(client: client).createAccount(
                    name: self.name, password: password, idleMs: Int64(AuthConfiguration().keepSignedInSeconds) * 1000, logger: logger)
            }
            print("userRecordName: \(account.userRecordName)")
            print("ckWebAuthToken: \(token)")
        }
    }

    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set an account's password from standard input (or remove it).")
        @OptionGroup var database: DatabaseOptions
        @Argument var name: String
        @Flag(help: "Remove the password: the account can then use only tokens an operator hands out.") var remove = false

        func run() async throws {
            let password = self.remove ? nil : try readPassword()
            let found = try await self.database.withClient { client, logger in
                try await CredentialStore(client: client).setPassword(accountName: self.name, password: password, logger: logger)
            }
            guard found else { throw ValidationError("no account is named \(self.name)") }
            print(self.remove ? "Password removed." : "Password set.")
        }
    }
}

/// The first line of standard input, so passwords never appear in the shell history or the process list.
func readPassword() throws -> String {
    guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw ValidationError("expected a password on standard input") }
    return line
}

struct Tokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage container API tokens.", subcommands: [Create.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a container API token (ckAPIToken); printed once.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "A note on what the token is for.") var label: String?

        func run() async throws {
            let token = try await self.database.withClient { client, logger in
                try await CredentialStore(client: client).createAPIToken(label: self.label, logger: logger)
            }
            print(token)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an API token, or a web auth token with its whole session.")
        @OptionGroup var database: DatabaseOptions
        @Argument var token: String

        func run() async throws {
            let revoked = try await self.database.withClient { client, logger in
                try await CredentialStore(client: client).revoke(token: self.token, logger: logger)
            }
            guard revoked else { throw ValidationError("no live token matches") }
            print("Revoked.")
        }
    }
}

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage server-to-server keys (ECDSA P-256), which public-database writes over HTTP need.",
        subcommands: [Add.self, List.self, Revoke.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a public key; prints its key id. Make one with: openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem && openssl ec -in eckey.pem -pubout -out eckey.pub")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The public key in PEM form (a file, or - for standard input).") var publicKey: String
        @Option(help: "A note on who uses the key.") var label: String?

        func run() async throws {
            let pem: String
            if self.publicKey == "-" {
                pem = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let bytes = FileManager.default.contents(atPath: self.publicKey) else { throw ValidationError("cannot read \(self.publicKey)") }
                pem = String(decoding: bytes, as: UTF8.self)
            }
            let keyID = try await self.database.withClient { client, logger in
                try await CredentialStore(client: client).registerServerKey(publicKeyPEM: pem, label: self.label, logger: logger)
            }
            print(keyID)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List key ids, labels and whether each is revoked.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let keys = try await self.database.withClient { client, logger in try await CredentialStore(client: client).serverKeys(logger: logger) }
            for key in keys {
                let created = Date(timeIntervalSince1970: Double(key.createdMs) / 1000).formatted(.iso8601)
                print(key.keyID, created, key.revokedMs == nil ? "live" : "revoked", key.label ?? "")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key: its signatures stop working within 10 seconds.")
        @OptionGroup var database: DatabaseOptions
        @Argument var keyID: String

        func run() async throws {
            let revoked = try await self.database.withClient { client, logger in
                try await CredentialStore(client: client).revokeServerKey(id: self.keyID, logger: logger)
            }
            guard revoked else { throw ValidationError("no live key has that id") }
            print("Revoked.")
        }
    }
}

struct Tombstones: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage deletion tombstones.", subcommands: [Purge.self])

    struct Purge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Purge tombstones older than the retention now.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "Keep tombstones younger than this many days.") var olderThanDays = 30

        func run() async throws {
            let cutoff = Timestamp.now - Int64(self.olderThanDays) * 86_400_000
            let purged = try await self.database.withClient { client, logger in
                try await recordStore(client, logger).purgeTombstones(olderThanMs: cutoff, logger: logger)
            }
            print("Purged \(purged.records) record and \(purged.zones) zone tombstones.")
        }
    }
}

/// Opens the record store (the token key lives in the database).
func recordStore(_ client: PostgresClient, _ logger: Logger) async throws -> RecordStore {
    let key = try await CredentialStore(client: client).tokenSigningKey(logger: logger)
    return RecordStore(client: client, signer: TokenSigner(key: key))
}

struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "schema", abstract: "Deploy or show the record schema.", subcommands: [Apply.self, Show.self])

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deploy a schema: additive changes apply (with indexes for queryable fields), destructive ones are refused.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The schema document.") var path = "Resources/schema.json"
        @Flag(help: "Show what would change without deploying.") var dryRun = false

        func run() async throws {
            guard let bytes = FileManager.default.contents(atPath: self.path) else { throw ValidationError("cannot read \(self.path)") }
            let schema = try Schema.parse(Array(bytes))
            let changes = try await self.database.withClient { client, logger in
                try await recordStore(client, logger).applySchema(schema, dryRun: self.dryRun, logger: logger)
            }
            if changes.isEmpty { print("Schema is up to date.") }
            for change in changes.additive { print("\(self.dryRun ? "would add" : "added"): \(change)") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the schema in force.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let schema = try await self.database.withClient { client, logger in try await recordStore(client, logger).deployedSchema(logger: logger) }
            guard let schema else { print("No schema is deployed."); return }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(schema), as: UTF8.self))
        }
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Merge the canonical dataset into the public database (one transaction).")
    @OptionGroup var database: DatabaseOptions
    @Argument(help: "The dataset folder.") var path = "Resources/canonical"
    @Option(help: "Container whose public database receives the data.") var container = "iCloud.com.sportstime.app"
    @Option(help: "development or production.") var environment = "development"
    @Flag(help: "Print the changes without writing them.") var dryRun = false

    func run() async throws {
        let dataset = try CanonicalDataset.load(from: self.path)
        let plan = try await self.database.withClient { client, logger in
            try await CanonicalImporter(records: try await recordStore(client, logger), logger: logger).run(
                dataset, container: self.container, environment: self.environment, dryRun: self.dryRun
            ) { print("import: \($0)") }
        }
        for line in plan.report { print(line) }
        print(plan.changes.isEmpty ? "Nothing changed." : "\(plan.changes.count) change(s)\(self.dryRun ? " (dry run)" : "").")
    }
}
