import CloudCore
import CloudPostgres
import Foundation
import Logging
import PostgresNIO
import Testing

/// Gives each test its own database, cloned from a template that was migrated once per test run.
/// The server comes from `scripts/test` (STADIUMCLOUD_TEST_DATABASE_URL); without one the tests fail, never skip.
actor TestDatabase {
    static let shared = TestDatabase()
    static let logger: Logger = {
        var logger = Logger(label: "tests")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        return logger
    }()

    /// The repository's migrations folder, found from this file so the working directory does not matter.
    static let migrationsPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("migrations").path

    private var template: String?
    /// CREATE DATABASE … TEMPLATE fails while another clone of the same template runs: clones go one at a time.
    private var queue: Task<Void, Never>?

    static func adminURL() throws -> DatabaseURL {
        guard let text = ProcessInfo.processInfo.environment["STADIUMCLOUD_TEST_DATABASE_URL"] else {
            throw ConfigurationError("STADIUMCLOUD_TEST_DATABASE_URL is not set: run the tests with scripts/test, which starts PostgreSQL")
        }
        return try DatabaseURL(text)
    }

    /// A new, migrated, empty database.
    func makeDatabase() async throws -> DatabaseURL {
        let previous = self.queue
        let clone = Task {
            _ = await previous?.value
            return try await self.cloneTemplate()
        }
        self.queue = Task { _ = await clone.result }
        do {
            return try await clone.value
        } catch {
            throw ConfigurationError("cannot create a test database: \(String(reflecting: error))")
        }
    }

    private func cloneTemplate() async throws -> DatabaseURL {
        let admin = try Self.adminURL()
        let template = try await self.migratedTemplate(admin)
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        try await Self.run("CREATE DATABASE \(name) TEMPLATE \(template)", on: admin)
        return admin.with(database: name)
    }

    /// One statement on a connection of its own. Not a pool: every test's clone waits for the one before it, so a
    /// pool whose shutdown never ended (seen once in CI: every later test waited) must not be in that chain.
    private static func run(_ sql: String, on url: DatabaseURL) async throws {
        let connection = try await PostgresConnection.connect(configuration: url.connectionConfiguration, id: 0, logger: Self.logger)
        do {
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Self.logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try await connection.close()
    }

    private func migratedTemplate(_ admin: DatabaseURL) async throws -> String {
        if let template { return template }
        let name = "template_\(ProcessInfo.processInfo.processIdentifier)_\(Int(Date().timeIntervalSince1970))"
        try await Self.run("CREATE DATABASE \(name)", on: admin)
        try await withDatabasePool(admin.with(database: name), maximumConnections: 1, logger: Self.logger) { client in
            try await Migrator(client: client, migrations: try Migration.load(from: Self.migrationsPath), logger: Self.logger).migrate()
        }
        self.template = name
        return name
    }
}

/// How many tests hold a database and a server at once. Unbounded, every database test of the run started together
/// on CI's busy two cores: 100+ servers, pools and listening connections contending, health checks timing out, and
/// twice a run that never ended. `STADIUMCLOUD_TEST_PARALLEL` overrides the default of 8.
actor TestSlots {
    static let shared = TestSlots(
        ProcessInfo.processInfo.environment["STADIUMCLOUD_TEST_PARALLEL"].flatMap(Int.init).map { max($0, 1) } ?? 8)

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { self.free = count }

    /// Returns once a slot is free, and takes it.
    func acquire() async {
        guard self.free == 0 else {
            self.free -= 1
            return
        }
        await withCheckedContinuation { self.waiting.append($0) }
    }

    /// Gives the slot to the longest waiting test, or back.
    func release() {
        if self.waiting.isEmpty { self.free += 1 } else { self.waiting.removeFirst().resume() }
    }
}
