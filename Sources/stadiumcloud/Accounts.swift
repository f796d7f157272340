import ArgumentParser
import CloudAssets
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import NIOCore

struct Accounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage accounts.", subcommands: [Create.self, Password.self, EndSessions.self, Delete.self, Export.self, Import.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account; prints its user record name and a web auth token (a 2-week, keep-signed-in session).")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "A unique account name (what the person signs in with).") var name: String
        @Flag(help: "Read a password from standard input, so the person can also sign in at /signin.") var passwordStdin = false
        @Flag(help: "An operator's account, for the web console at /console (needs --password-stdin); not a person's.")
        var `operator` = false
        @Option(help: "scrypt cost (log2 N) of the password's hash, as serve's option; lower only for tests.")
        var passwordHashCost = ServerConfiguration().auth.passwordHashLog2Rounds

        func validate() throws {
            if self.operator, !self.passwordStdin {
                throw ValidationError("an operator signs in to the console with a password: add --password-stdin")
            }
        }

        func run() async throws {
            let password = self.passwordStdin ? try readPassword() : nil
            var configuration = ServerConfiguration()
            configuration.auth.passwordHashLog2Rounds = self.passwordHashCost
            let (account, token) = try await Live(self.database, configuration: configuration).run { live, logger in
                let created = try await live.stores.credentials.createAccount(
                    name: self.name, password: password, idleMs: Int64(live.configuration.auth.keepSignedInSeconds) * 1000, logger: logger)
                if self.operator { _ = try await live.stores.credentials.setOperator(accountName: self.name, true, logger: logger) }
                return created
            }
            print("userRecordName: \(account.userRecordName)")
            print("ckWebAuthToken: \(token)")
        }
    }

    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set an account's password from standard input (or remove it).")
        @OptionGroup var database: DatabaseOptions
        @Argument var name: String
        @Flag(help: "Remove the password: the account can then use only tokens an operator hands out.") var remove = false

        func run() async throws {
            let password = self.remove ? nil : try readPassword()
            let found = try await Live(self.database).run { live, logger in
                try await live.stores.credentials.setPassword(accountName: self.name, password: password, logger: logger)
            }
            guard found else { throw ValidationError("no account is named \(self.name)") }
            print(self.remove ? "Password removed." : "Password set.")
        }
    }

    struct EndSessions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "end-sessions",
            abstract: "End every session of an account: its devices sign in again (after a restore undid a sign-out, say).")
        @OptionGroup var database: DatabaseOptions
        @Argument var name: String

        func run() async throws {
            let ended = try await Live(self.database).run { live, logger in
                try await live.stores.credentials.endSessions(accountName: self.name, logger: logger)
            }
            guard let ended else { throw ValidationError("no account is named \(self.name)") }
            print("Ended \(ended) session\(ended == 1 ? "" : "s").")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase an account and everything in it, for good: records, zones, asset bytes, sessions, tokens, its trip polls and votes.",
            discussion: "docs/PRIVACY.md says what goes, in which order, and what a restore brings back.")
        @OptionGroup var database: DatabaseOptions
        @Argument var name: String
        @Option(help: "Where asset bytes live, as for serve (env STADIUMCLOUD_ASSETS).") var assets: String?
        @Flag(help: "Confirm: nothing of the account can be brought back (except from a backup).") var yes = false

        func validate() throws {
            guard self.yes else { throw ValidationError("this erases \(self.name) and everything in it for good: add --yes") }
        }

        func run() async throws {
            let location = self.assets ?? ProcessInfo.processInfo.environment["STADIUMCLOUD_ASSETS"] ?? ServerConfiguration().assets
            let erased = try await Live(self.database).run { live, logger in
                let assets = try openAssetStore(location, logger: logger)
                return try await eraseAccount(
                    self.name, records: try await live.stores.records(logger: logger), credentials: live.stores.credentials, assets: assets,
                    logger: logger)
            }
            guard let erased else { throw ValidationError("no account is named \(self.name)") }
            print(
                "Erased \(self.name): \(erased.databases) database(s), \(erased.records) record(s), \(erased.assets) asset(s); \(erased.publicRecords) public record(s) deleted."
            )
        }
    }
}

extension Accounts {
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write an account, its records and its assets' bytes, to one archive (a tar file with a manifest of SHA-256s).",
            discussion:
                "The format is in docs/PRIVACY.md. The file appears only once complete; a run that stops leaves FILE.partial, and running again starts over."
        )
        @OptionGroup var database: DatabaseOptions
        @Argument var name: String
        @Option(name: .shortAndLong, help: "The archive to write (default: stadiumcloud-NAME.tar).") var output: String?
        @Option(help: "Where asset bytes live, as for serve (env STADIUMCLOUD_ASSETS).") var assets: String?

        func run() async throws {
            let location = self.assets ?? ProcessInfo.processInfo.environment["STADIUMCLOUD_ASSETS"] ?? ServerConfiguration().assets
            let path = self.output ?? AccountArchive.fileName(for: self.name)
            let partial = path + ".partial"
            let manifest = try await Live(self.database).run { live, logger -> AccountArchive.Manifest? in
                let records = try await live.stores.records(logger: logger)
                guard let export = try await AccountExport.of(self.name, records: records, logger: logger) else { return nil }
                guard FileManager.default.createFile(atPath: partial, contents: nil), let file = FileHandle(forWritingAtPath: partial) else {
                    throw ValidationError("cannot write \(partial)")
                }
                defer { try? file.close() }
                let manifest = try await export.write(records: records, assets: try openAssetStore(location, logger: logger), logger: logger) {
                    try file.write(contentsOf: Data($0.readableBytesView))
                }
                try file.synchronize()
                return manifest
            }
            guard let manifest else { throw ValidationError("no account is named \(self.name)") }
            _ = try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.moveItem(atPath: partial, toPath: path)
            let bytes = manifest.files.reduce(Int64(0)) { $0 + $1.size }
            print(
                "Exported \(self.name) to \(path): \(manifest.databases.count) database(s), \(manifest.files.count) file(s), \(bytes) bytes of content."
            )
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read an account export into an account that holds nothing yet (create it first).",
            discussion:
                "All or nothing: the whole archive is checked (its manifest's MAC, every file, page and asset) before one transaction writes it; a refused archive leaves the account as it was. Records keep their names, types and fields; assets their bytes."
        )
        @OptionGroup var database: DatabaseOptions
        @Argument var name: String
        @Argument(help: "The archive (stadiumcloud accounts export, users/export).") var archive: String
        @Option(help: "Where asset bytes live, as for serve (env STADIUMCLOUD_ASSETS).") var assets: String?
        @Flag(
            help:
                "Import an archive this server cannot authenticate: made by another server (another database's key) or before exports were signed. Its files are still checked against its manifest; trust only a file you know where it came from."
        )
        var trustUnsigned = false

        func run() async throws {
            let location = self.assets ?? ProcessInfo.processInfo.environment["STADIUMCLOUD_ASSETS"] ?? ServerConfiguration().assets
            let summary = try await Live(self.database).run { live, logger in
                try await importAccount(
                    self.name, from: URL(fileURLWithPath: self.archive), trustUnsigned: self.trustUnsigned,
                    records: try await live.stores.records(logger: logger),
                    assets: try openAssetStore(location, logger: logger), logger: logger)
            }
            print(
                "Imported into \(self.name): \(summary.zones) zone(s), \(summary.records) record(s), \(summary.assets) asset(s); \(summary.publicRecordsSkipped) public record(s) left out."
            )
        }
    }
}

/// The first line of standard input, so passwords never appear in the shell history or the process list.
func readPassword() throws -> String {
    guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw ValidationError("expected a password on standard input") }
    return line
}
