import ArgumentParser
import CloudPostgres
import Foundation

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The database's history: which epoch change tokens are signed in (docs/SYNC.md, \"Restores and failovers\").",
        subcommands: [Show.self, Fork.self], defaultSubcommand: Show.self)

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the current epoch, when it began and the fingerprint it began in.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let line = try await Live(self.database).run { live, logger in
                try await live.client.confirmHistory(logger: logger)
                return try await live.client.historyDescription(logger: logger)
            }
            print(line)
        }
    }

    struct Fork: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Begin a new history now: every change token, asset URL and receipt signed before is refused, and devices fetch again.",
            discussion: """
                The server notices a restore into a new database, pg_restore --clean, point-in-time recovery and the \
                promotion of a replica by itself. Run this, before starting the servers, after a restore it cannot \
                notice: a file-system snapshot of a stopped cluster put back in place.
                """)
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let line = try await Live(self.database).run { live, logger in
                try await live.client.forkHistory(reason: "stadiumcloud history fork", logger: logger)
                return try await live.client.historyDescription(logger: logger)
            }
            print(line)
        }
    }
}
