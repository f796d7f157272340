import CloudPostgres
import Foundation
import PostgresNIO
import Testing

@Suite(.bounded) struct MigratorTests {
    static let first = Migration(version: 1, name: "one", sql: "CREATE TABLE one (id int); CREATE TABLE one_b (id int);")
    static let second = Migration(version: 2, name: "two", sql: "CREATE TABLE two (id int)")

    /// A database with no migrations applied.
    static func withEmptyDatabase(_ body: (PoolBox) async throws -> Void) async throws {
        let admin = try TestDatabase.adminURL()
        let name = "migrator_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try await withDatabasePool(admin, maximumConnections: 1, logger: TestDatabase.logger) { client in
            try await client.query(.init(unsafeSQL: "CREATE DATABASE \(name)"), logger: TestDatabase.logger)
        }
        try await withDatabasePool(admin.with(database: name), logger: TestDatabase.logger) { client in
            try await body(PoolBox(client: client))
        }
    }

    @Test func appliesInOrderOnceAndReportsStatus() async throws {
        try await Self.withEmptyDatabase { (box: PoolBox) async throws in
            let migrator = Migrator(client: box.client, migrations: [Self.first, Self.second], logger: TestDatabase.logger)
            #expect(try await migrator.pending().map(\.version) == [1, 2])
            #expect(try await migrator.migrate() == [1, 2])
            #expect(try await migrator.migrate() == [])
            #expect(try await migrator.status().map(\.state) == [.applied, .applied])
        }
    }

    @Test func anEditedAppliedMigrationIsAClearError() async throws {
        try await Self.withEmptyDatabase { (box: PoolBox) async throws in
            try await Migrator(client: box.client, migrations: [Self.first], logger: TestDatabase.logger).migrate()
            let edited = Migration(version: 1, name: "one", sql: Self.first.sql + " -- edited")
            let migrator = Migrator(client: box.client, migrations: [edited, Self.second], logger: TestDatabase.logger)
            #expect(try await migrator.status().map(\.state) == [.modified, .pending])
            await #expect { try await migrator.migrate() } throws: { "\($0)".contains("was edited after it was applied") }
            await #expect { try await migrator.pending() } throws: { "\($0)".contains("append-only") }
        }
    }

    @Test func concurrentMigratorsDoNotRace() async throws {
        try await Self.withEmptyDatabase { (box: PoolBox) async throws in
            let migrations = [Self.first, Self.second]
            let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
                for _ in 0..<4 {
                    group.addTask { try await Migrator(client: box.client, migrations: migrations, logger: TestDatabase.logger).migrate() }
                }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            #expect(applied.sorted() == [1, 2])
        }
    }

    @Test func aFailingMigrationLeavesNothingBehind() async throws {
        try await Self.withEmptyDatabase { (box: PoolBox) async throws in
            let broken = Migration(version: 3, name: "broken", sql: "CREATE TABLE three (id int); SELECT no_such_function();")
            let migrator = Migrator(client: box.client, migrations: [Self.first, broken], logger: TestDatabase.logger)
            await #expect(throws: (any Error).self) { try await migrator.migrate() }
            #expect(try await migrator.status().map(\.state) == [.applied, .pending])
            let rows = try await box.client.query("SELECT to_regclass('three') IS NULL", logger: TestDatabase.logger)
            for try await absent in rows.decode(Bool.self) { #expect(absent) }
        }
    }

    @Test func theRepositoryMigrationsLoad() throws {
        let migrations = try Migration.load(from: TestDatabase.migrationsPath)
        #expect(migrations.first?.version == 1)
        #expect(Set(migrations.map(\.version)).count == migrations.count)
    }
}
