import ArgumentParser
import CloudPostgres
import Foundation

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply or list schema migrations.", subcommands: [Up.self, Status.self])

    struct Up: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Apply every pending migration, in order.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let migrations = try Migration.load(from: self.database.migrations)
            let applied = try await Live(self.database).run { live, logger in
                try await live.stores.migrator(migrations, logger: logger).migrate()
            }
            print(applied.isEmpty ? "Database is up to date." : "Applied migrations \(applied.map(String.init).joined(separator: ", ")).")
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List migrations and whether each is applied.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let migrations = try Migration.load(from: self.database.migrations)
            let statuses = try await Live(self.database).run { live, logger in
                try await live.stores.migrator(migrations, logger: logger).status()
            }
            for status in statuses { print(String(format: "%04d", status.version), status.name, status.state.rawValue) }
        }
    }
}
