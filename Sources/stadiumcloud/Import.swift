import ArgumentParser
import Canon
import CloudPostgres
import Foundation

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
        let plan = try await Live(self.database).run { live, logger in
            let records = try await live.stores.records(logger: logger)
            let plan = try await CanonicalImporter(records: records, logger: logger).run(
                dataset, container: self.container, environment: self.environment, dryRun: self.dryRun
            ) { print("import: \($0)") }
            // Running servers wake their waiting devices when the notification arrives.
            await records.changes.flush()
            return plan
        }
        for line in plan.report { print(line) }
        print(plan.changes.isEmpty ? "Nothing changed." : "\(plan.changes.count) change(s)\(self.dryRun ? " (dry run)" : "").")
    }
}
