import ArgumentParser
import CloudPostgres
import Foundation

struct Tokens: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Manage container API tokens.", subcommands: [Create.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a container API token (ckAPIToken); printed once.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "A note on what the token is for.") var label: String?

        func run() async throws {
            let token = try await Live(self.database).run { live, logger in
                try await live.stores.credentials.createAPIToken(label: self.label, logger: logger)
            }
            print(token)
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an API token, or a web auth token with its whole session.")
        @OptionGroup var database: DatabaseOptions
        @Argument var token: String

        func run() async throws {
            let revoked = try await Live(self.database).run { live, logger in
                try await live.stores.credentials.revoke(token: self.token, logger: logger)
            }
            guard revoked else { throw ValidationError("no live token matches") }
            print("Revoked.")
        }
    }
}
