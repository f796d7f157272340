import ArgumentParser
import CloudCore
import CloudPostgres
import Foundation
import Logging

struct Records: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Moderate records of the public database.", subcommands: [Delete.self])

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete abusive public records (a trip poll, a vote): devices get the tombstones; the reason goes to the log.")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "Record names.") var names: [String]
        @Option(help: "The zone (a trip poll's zone is its share code).") var zone = defaultZoneName
        @Option(help: "The container.") var container = "iCloud.com.sportstime.app"
        @Option(help: "development or production.") var environment = "development"
        @Option(help: "Why, for the log (required).") var reason: String

        func validate() throws {
            guard !self.reason.trimmingCharacters(in: .whitespaces).isEmpty else { throw ValidationError("--reason must say why") }
            guard SchemaScope.environments.contains(self.environment) else {
                throw ValidationError("--environment must be development or production")
            }
        }

        func run() async throws {
            let result = try await Live(self.database).run { live, logger in
                let records = try await live.stores.records(logger: logger)
                let database = try await records.database(
                    container: self.container, environment: self.environment, scope: .public, owner: nil, logger: logger)
                let stamp = ChangeStamp(timestamp: Timestamp.now, userRecordName: "_operator", deviceID: "stadiumcloud records delete")
                let result = try await records.modify(
                    self.names.map { RecordOperation(type: .forceDelete, recordName: $0) }, zoneName: self.zone, atomic: false, in: database,
                    stamp: stamp, logger: logger)
                for outcome in result.outcomes {
                    if case .deleted(let name, _) = outcome {
                        logger.notice(
                            "an operator deleted a public record",
                            metadata: ["record": "\(name)", "zone": "\(self.zone)", "container": "\(self.container)", "reason": "\(self.reason)"])
                    }
                }
                await records.changes.flush()
                return result
            }
            var failed = false
            for outcome in result.outcomes {
                switch outcome {
                case .deleted(let name, _): print("deleted: \(name)")
                case .failed(let name, let error, _):
                    failed = true
                    print("not deleted: \(name): \(error.reason)")
                case .saved: break
                }
            }
            if failed { throw ExitCode.failure }
        }
    }
}
