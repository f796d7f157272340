import ArgumentParser
import CloudCore
import Foundation

struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Deploy or show the record schema.", subcommands: [Apply.self, Show.self])

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deploy a schema: additive changes apply (with indexes for queryable fields), destructive ones are refused.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The schema document.") var path = "Resources/schema.json"
        @Flag(help: "Show what would change without deploying.") var dryRun = false

        func run() async throws {
            guard let bytes = FileManager.default.contents(atPath: self.path) else { throw ValidationError("cannot read \(self.path)") }
            let schema = try Schema.parse(Array(bytes))
            let changes = try await Live(self.database).run { live, logger in
                try await live.stores.records(logger: logger).applySchema(schema, dryRun: self.dryRun, logger: logger)
            }
            if changes.isEmpty { print("Schema is up to date.") }
            for change in changes.additive { print("\(self.dryRun ? "would add" : "added"): \(change)") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the schema in force.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let schema = try await Live(self.database).run { live, logger in
                try await live.stores.records(logger: logger).deployedSchema(logger: logger)
            }
            guard let schema else { print("No schema is deployed."); return }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(schema), as: UTF8.self))
        }
    }
}
