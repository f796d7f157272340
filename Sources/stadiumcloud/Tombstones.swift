import ArgumentParser
import CloudCore
import CloudPostgres
import Foundation

struct Tombstones: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage deletion tombstones.", subcommands: [Purge.self])

    struct Purge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Purge tombstones older than the retention now.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "Keep tombstones younger than this many days.") var olderThanDays = 30

        func run() async throws {
            let cutoff = Timestamp.now - Int64(self.olderThanDays) * 86_400_000
            let purged = try await Live(self.database).run { live, logger in
                try await live.stores.records(logger: logger).purgeTombstones(olderThanMs: cutoff, logger: logger)
            }
            print("Purged \(purged.records) record and \(purged.zones) zone tombstones.")
        }
    }
}
