import ArgumentParser
import CloudHTTP
import CloudPostgres
import Foundation
import Logging

@main
struct StadiumCloud: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stadiumcloud",
        abstract: "A CloudKit Web Services-compatible sync server on PostgreSQL.", version: serverVersion,
        subcommands: [
            Serve.self, Migrate.self, SchemaCommand.self, Import.self, Accounts.self, Tokens.self, Keys.self, Snapshot.self, Tombstones.self, Records.self, History.self,
        ])
}

/// Options every command that talks to the database shares.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "postgres://user:password@host:port/database (env STADIUMCLOUD_DATABASE_URL or DATABASE_URL)")
    var databaseURL: String?

    @Option(help: "Folder of NNNN_name.sql migrations.")
    var migrations = "migrations"

    @Option(help: "trace, debug, info, notice, warning, error or critical (env LOG_LEVEL).")
    var logLevel: String?

    var logger: Logger {
        var logger = Logger(label: "stadiumcloud")
        logger.logLevel = (self.logLevel ?? ProcessInfo.processInfo.environment["LOG_LEVEL"]).flatMap(Logger.Level.init(rawValue:)) ?? .info
        return logger
    }

    func url() throws -> DatabaseURL {
        let environment = ProcessInfo.processInfo.environment
        guard let text = self.databaseURL ?? environment["STADIUMCLOUD_DATABASE_URL"] ?? environment["DATABASE_URL"] else {
            throw ValidationError("no database: pass --database-url or set STADIUMCLOUD_DATABASE_URL (scripts/run starts a local PostgreSQL)")
        }
        return try DatabaseURL(text)
    }
}
