import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import Testing

/// `serve`'s start-up, as its `ServerService` runs it inside the process's ServiceGroup.
@Suite(.bounded) struct ServerStartTests {
    static func service(_ stores: Stores, migrations: [Migration], apply: Bool) -> ServerService {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.assets = NSTemporaryDirectory() + "stadiumcloud-start-" + UUID().uuidString
        return ServerService(
            stores: stores, configuration: configuration, migrations: migrations, applyMigrations: apply,
            extensions: { _ in ServerExtensions() }, logger: TestDatabase.logger)
    }

    @Test func serveRefusesToStartWithPendingMigrationsUnlessToldToApplyThem() async throws {
        let url = try await TestDatabase.shared.makeDatabase()
        try await withDatabasePool(url, logger: TestDatabase.logger) { client in
            let stores = Stores(client: client, passwordHashLog2Rounds: 10)
            let migrations =
                try Migration.load(from: TestDatabase.migrationsPath)
                + [Migration(version: 9999, name: "later", sql: "CREATE TABLE later (id int)")]
            do {
                try await Self.service(stores, migrations: migrations, apply: false).run()
                Issue.record("serve started with a pending migration")
            } catch let error as ConfigurationError {
                #expect(error.description.contains("9999_later"))
                #expect(error.description.contains("stadiumcloud migrate up"))
            }
            #expect(try await stores.migrator(migrations, logger: TestDatabase.logger).pending().map(\.version) == [9999], "nothing applied")
            // `serve --migrate` applies it and gets as far as the live dependencies.
            _ = try await Self.service(stores, migrations: migrations, apply: true).start()
            #expect(try await stores.migrator(migrations, logger: TestDatabase.logger).pending().isEmpty)
        }
    }
}
