import ArgumentParser
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation

struct Accounts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage accounts.", subcommands: [Create.self, Password.self, EndSessions.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account; prints its user record name and a web auth token (a 2-week, keep-signed-in session).")
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "A unique account name (what the person signs in with).") var name: String
        @Flag(help: "Read a password from standard input, so the person can also sign in at /signin.") var passwordStdin = false
        @Flag(help: "An operator's account, for the web console at /console (needs --password-stdin); not a person's.")
        var `operator` = false

        func validate() throws {
            if self.operator, !self.passwordStdin {
                throw ValidationError("an operator signs in to the console with a password: add --password-stdin")
            }
        }

        func run() async throws {
            let password = self.passwordStdin ? try readPassword() : nil
            let (account, token) = try await Live(self.database).run { live, logger in
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
}

/// The first line of standard input, so passwords never appear in the shell history or the process list.
func readPassword() throws -> String {
    guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw ValidationError("expected a password on standard input") }
    return line
}
