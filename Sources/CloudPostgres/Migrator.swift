import CloudCore
import Crypto
import Foundation
import Logging
import PostgresNIO

/// One `migrations/NNNN_name.sql` file.
public struct Migration: Sendable, Equatable {
    public var version: Int
    public var name: String
    public var sql: String
    /// SHA-256 of the file's bytes, hex.
    public var checksum: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = SHA256.hash(data: Array(sql.utf8)).hexString
    }

    /// The file's statements as one: PostgresNIO speaks the extended protocol, which runs one statement per
    /// message, while a PL/pgSQL `EXECUTE` runs a whole script (still inside the migration's transaction).
    func asOneStatement() throws -> String {
        let tag = "$stadiumcloud_migration_\(self.version)$"
        guard !self.sql.contains(tag) else { throw ConfigurationError("migration \(self.version) contains \(tag)") }
        return "DO $stadiumcloud_do$ BEGIN EXECUTE \(tag)\(self.sql)\(tag); END $stadiumcloud_do$"
    }

    /// Reads every `NNNN_name.sql` in `directory`, in version order.
    public static func load(from directory: String) throws -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw ConfigurationError("cannot read the migrations folder \(directory); pass --migrations PATH")
        }
        let migrations = try names.filter { $0.hasSuffix(".sql") }.map { file -> Migration in
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]) else {
                throw ConfigurationError("migration file \(file) is not named NNNN_name.sql")
            }
            let sql = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            return Migration(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql)
        }.sorted { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw ConfigurationError("two migrations have version \(next.version): \(previous.name) and \(next.name)")
        }
        return migrations
    }
}

/// The state of one migration in a database.
public struct MigrationStatus: Sendable, Equatable {
    public enum State: String, Sendable {
        case applied, pending, modified
        case missingFile = "missing file"
    }
    public var version: Int
    public var name: String
    public var state: State
}

/// Applies append-only migrations in order, each in its own transaction under an advisory lock, so servers
/// starting at once do not race; an already-applied file whose checksum changed is refused.
public struct Migrator: Sendable {
    let client: PostgresPool
    let migrations: [Migration]
    let logger: Logger
    /// Arbitrary constant shared by every StadiumCloud process: the advisory lock key for migrations.
    static let lockKey: Int64 = 0x5354_4144_4d49_4752

    public init(client: PostgresPool, migrations: [Migration], logger: Logger) {
        self.client = client
        self.migrations = migrations
        self.logger = logger
    }

    public func status() async throws -> [MigrationStatus] {
        let applied = try await self.client.reading { connection in try await Self.applied(on: connection, logger: self.logger) }
        var statuses = self.migrations.map { migration -> MigrationStatus in
            let state: MigrationStatus.State =
                switch applied[migration.version]?.checksum {
                case nil: .pending
                case migration.checksum: .applied
                default: .modified
                }
            return MigrationStatus(version: migration.version, name: migration.name, state: state)
        }
        let known = Set(self.migrations.map(\.version))
        for (version, row) in applied where !known.contains(version) {
            statuses.append(MigrationStatus(version: version, name: row.name, state: .missingFile))
        }
        return statuses.sorted { $0.version < $1.version }
    }

    /// Fails when an applied migration was edited or deleted; returns the pending ones.
    public func pending() async throws -> [MigrationStatus] {
        let statuses = try await self.status()
        try Self.check(statuses)
        return statuses.filter { $0.state == .pending }
    }

    /// Applies every pending migration; returns the versions this call applied.
    @discardableResult
    public func migrate() async throws -> [Int] {
        var appliedNow: [Int] = []
        for migration in self.migrations {
            let didApply = try await self.client.transaction(logger: self.logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.lockKey))", logger: self.logger)
                try await connection.query(
                    """
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                        applied_at timestamptz NOT NULL DEFAULT now())
                    """, logger: self.logger)
                let applied = try await Self.applied(on: connection, logger: self.logger)
                try Self.check(
                    self.migrations.map { known in
                        let state: MigrationStatus.State =
                            applied[known.version].map { $0.checksum == known.checksum ? .applied : .modified } ?? .pending
                        return MigrationStatus(version: known.version, name: known.name, state: state)
                    })
                guard applied[migration.version] == nil else { return false }
                self.logger.info("applying migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                try await connection.query(PostgresQuery(unsafeSQL: try migration.asOneStatement()), logger: self.logger)
                try await connection.query(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (\(migration.version), \(migration.name), \(migration.checksum))",
                    logger: self.logger)
                return true
            }
            if didApply { appliedNow.append(migration.version) }
        }
        return appliedNow
    }

    /// What must hold before serving: with `apply` pending migrations are applied; without, any pending one
    /// stops the start with the list and what to run.
    public func prepareForServing(apply: Bool) async throws {
        if apply {
            try await self.migrate()
        } else if case let pending = try await self.pending(), !pending.isEmpty {
            let names = pending.map { "\($0.version)_\($0.name)" }.joined(separator: ", ")
            throw ConfigurationError("\(pending.count) pending migration(s) (\(names)): run `stadiumcloud migrate up` or pass --migrate")
        }
    }

    static func check(_ statuses: [MigrationStatus]) throws {
        if let modified = statuses.first(where: { $0.state == .modified }) {
            throw ConfigurationError(
                "migration \(modified.version)_\(modified.name) was edited after it was applied; migrations are append-only: restore the file and add a new migration instead"
            )
        }
    }

    private static func applied(on connection: PostgresConnection, logger: Logger) async throws -> [Int: (name: String, checksum: String)] {
        let exists = try await connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL", logger: logger)
        var tableExists = false
        for try await value in exists.decode(Bool.self) { tableExists = value }
        guard tableExists else { return [:] }
        var applied: [Int: (name: String, checksum: String)] = [:]
        let rows = try await connection.query("SELECT version, name, checksum FROM schema_migrations", logger: logger)
        for try await (version, name, checksum) in rows.decode((Int, String, String).self) {
            applied[version] = (name, checksum)
        }
        return applied
    }
}
