import ArgumentParser
import CloudCore
import CloudPostgres
import Foundation
import Logging

struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema", abstract: "Apply, deploy, show and compare the record schema of a container's environments.",
        subcommands: [Apply.self, Deploy.self, Show.self, Diff.self])

    /// Which container and environment a command is about.
    struct ScopeOptions: ParsableArguments {
        @Option(help: "The container.") var container = "iCloud.com.sportstime.app"
        @Option(help: "development or production.") var environment = "development"

        var scope: SchemaScope {
            get throws {
                guard SchemaScope.environments.contains(self.environment) else {
                    throw ValidationError("--environment must be development or production")
                }
                return SchemaScope(container: self.container, environment: self.environment)
            }
        }
    }

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Apply a schema document to development: additive changes apply (with indexes for queryable fields), destructive ones are refused.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The container.") var container = "iCloud.com.sportstime.app"
        @Argument(help: "The schema document.") var path = "Resources/schema.json"
        @Flag(help: "Show what would change without applying.") var dryRun = false

        func run() async throws {
            let schema = try readSchema(self.path)
            let scope = SchemaScope(container: self.container, environment: "development")
            let changes = try await Live(self.database).run { live, logger in
                let records = try await schemaStore(live, logger, container: self.container)
                return try await records.applySchema(schema, to: scope, dryRun: self.dryRun, logger: logger)
            }
            report(changes, to: scope, dryRun: self.dryRun)
        }
    }

    struct Deploy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deploy a container's development schema to production: additive changes only, destructive ones refused with reasons.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The container.") var container = "iCloud.com.sportstime.app"
        @Flag(help: "Show what would change without deploying.") var dryRun = false

        func run() async throws {
            let changes = try await Live(self.database).run { live, logger in
                let records = try await schemaStore(live, logger, container: self.container)
                return try await records.deploySchema(container: self.container, dryRun: self.dryRun, logger: logger)
            }
            report(changes, to: SchemaScope(container: self.container, environment: "production"), dryRun: self.dryRun)
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the schema in force in a container's environment.")
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var scope: ScopeOptions

        func run() async throws {
            let scope = try self.scope.scope
            let schema = try await Live(self.database).run { live, logger in
                let records = try await schemaStore(live, logger, container: scope.container)
                return try await records.deployedSchema(in: scope, logger: logger)
            }
            guard let schema else { print("No schema is deployed to \(scope)."); return }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(schema), as: UTF8.self))
        }
    }

    struct Diff: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What a schema document would change in an environment; without a document, what `schema deploy` would change.")
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var scope: ScopeOptions
        @Argument(help: "A schema document (default: the container's development schema, compared with production).") var path: String?

        func run() async throws {
            let document = try self.path.map(readSchema)
            let target = try self.path == nil ? SchemaScope(container: self.scope.container, environment: "production") : self.scope.scope
            let changes = try await Live(self.database).run { live, logger in
                let records = try await schemaStore(live, logger, container: target.container)
                let development = SchemaScope(container: target.container, environment: "development")
                var proposed = document
                if proposed == nil { proposed = try await records.deployedSchema(in: development, logger: logger) }
                let proposedSchema = proposed ?? Schema(recordTypes: [:])
                let current = try await records.deployedSchema(in: target, logger: logger) ?? Schema(recordTypes: [:])
                return current.changes(to: proposedSchema)
            }
            if changes.isEmpty { print("No difference: \(target) is up to date.") }
            for change in changes.additive { print("would add: \(change)") }
            for change in changes.destructive { print("refused (destructive): \(change)") }
        }
    }
}

/// The record store, with the schema deployed before schemas were per container adopted by `container`'s
/// environments (as `serve` does at start-up), so every command sees the same schemas the server would.
private func schemaStore(_ live: Live, _ logger: Logger, container: String) async throws -> RecordStore {
    let records = try await live.stores.records(logger: logger)
    try await records.adoptGlobalSchema(containers: [container], logger: logger)
    return records
}

private func readSchema(_ path: String) throws -> Schema {
    guard let bytes = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
    return try Schema.parse(Array(bytes))
}

private func report(_ changes: SchemaChanges, to scope: SchemaScope, dryRun: Bool) {
    if changes.isEmpty { print("Schema of \(scope) is up to date.") }
    for change in changes.additive { print("\(dryRun ? "would add" : "added"): \(change)") }
}
