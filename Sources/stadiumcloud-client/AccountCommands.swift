import ArgumentParser
import CloudCore
import CloudSync
import Foundation
import StadiumCloudClient

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct SignIn: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signin", abstract: "Sign in with a password (from STADIUMCLOUD_PASSWORD or stdin) and remember the server.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The account name.") var account: String
    @Option(help: "The server's base URL.") var server = "http://127.0.0.1:8080"
    @Option(help: "The CloudKit container.") var container = "iCloud.com.sportstime.app"
    @Option(help: "development or production.") var environment = "development"
    @Option(help: "The container's API token (env STADIUMCLOUD_API_TOKEN).") var apiToken: String?

    func run() async throws {
        try await reporting {
            guard let apiToken = self.apiToken ?? ProcessInfo.processInfo.environment["STADIUMCLOUD_API_TOKEN"] else {
                throw ValidationError("give the container's API token: --api-token or STADIUMCLOUD_API_TOKEN")
            }
            guard let url = URL(string: self.server), url.scheme != nil else { throw ValidationError("\(self.server) is not a URL") }
            let client = try self.options.open(
                ServerEndpoint(baseURL: url, container: self.container, environment: self.environment, apiToken: apiToken))
            let user = try await client.signIn(accountName: self.account, password: readPassword())
            print("signed in as \(self.account) (\(user)); store \(self.options.path)")
        }
    }
}

/// The password from STADIUMCLOUD_PASSWORD, else asked without echo on a terminal, else the first line of stdin.
func readPassword() -> String {
    if let password = ProcessInfo.processInfo.environment["STADIUMCLOUD_PASSWORD"] { return password }
    if isatty(0) != 0 { return getpass("password: ").map { String(cString: $0) } ?? "" }  // no echo on a terminal
    return readLine(strippingNewline: true) ?? ""
}

struct DeleteAccount: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete-account",
        abstract: "Erase the signed-in account and everything in it on the server, for good (its password again, from STADIUMCLOUD_PASSWORD or stdin); then forget it here.")
    @OptionGroup var options: StoreOptions
    @Flag(help: "Confirm: nothing of the account can be brought back.") var yes = false

    func validate() throws {
        guard self.yes else { throw ValidationError("this erases the account and everything in it for good: add --yes") }
    }

    func run() async throws {
        try await reporting {
            try await self.options.open().deleteAccount(password: readPassword())
            print("account erased; signed out")
        }
    }
}

struct ExportAccount: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export-account",
        abstract: "Download the signed-in account, its records and photos' bytes, as one archive (a tar file with a manifest of SHA-256s), checked on arrival.")
    @OptionGroup var options: StoreOptions
    @Option(name: .shortAndLong, help: "The archive to write.") var output: String

    func run() async throws {
        try await reporting {
            let manifest = try await self.options.open().exportAccount(to: URL(fileURLWithPath: self.output))
            let bytes = manifest.files.reduce(Int64(0)) { $0 + $1.size }
            print("exported to \(self.output): \(manifest.files.count) file(s), \(bytes) bytes of content, every SHA-256 checked")
        }
    }
}

struct SignOut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "signout", abstract: "End the session (queued edits stay for the next sign-in).")
    @OptionGroup var options: StoreOptions

    func run() async throws {
        try await reporting {
            try await self.options.open().signOut()
            print("signed out")
        }
    }
}
