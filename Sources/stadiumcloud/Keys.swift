import ArgumentParser
import CloudPostgres
import Foundation

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage server-to-server keys (ECDSA P-256), which public-database writes over HTTP need.",
        subcommands: [Add.self, List.self, Revoke.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Register a public key; prints its key id. Make one with: openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem && openssl ec -in eckey.pem -pubout -out eckey.pub"
        )
        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The public key in PEM form (a file, or - for standard input).") var publicKey: String
        @Option(help: "A note on who uses the key.") var label: String?

        func run() async throws {
            let pem: String
            if self.publicKey == "-" {
                pem = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let bytes = FileManager.default.contents(atPath: self.publicKey) else { throw ValidationError("cannot read \(self.publicKey)") }
                pem = String(decoding: bytes, as: UTF8.self)
            }
            let keyID = try await Live(self.database).run { live, logger in
                try await live.stores.credentials.registerServerKey(publicKeyPEM: pem, label: self.label, logger: logger)
            }
            print(keyID)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List key ids, labels and whether each is revoked.")
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let keys = try await Live(self.database).run { live, logger in try await live.stores.credentials.serverKeys(logger: logger) }
            for key in keys {
                let created = Date(timeIntervalSince1970: Double(key.createdMs) / 1000).formatted(.iso8601)
                print(key.keyID, created, key.revokedMs == nil ? "live" : "revoked", key.label ?? "")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key: its signatures stop working within 10 seconds.")
        @OptionGroup var database: DatabaseOptions
        @Argument var keyID: String

        func run() async throws {
            let revoked = try await Live(self.database).run { live, logger in
                try await live.stores.credentials.revokeServerKey(id: self.keyID, logger: logger)
            }
            guard revoked else { throw ValidationError("no live key has that id") }
            print("Revoked.")
        }
    }
}
