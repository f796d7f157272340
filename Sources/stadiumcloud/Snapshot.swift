import ArgumentParser
import CloudCore
import CloudHTTP
import CloudPostgres
import Crypto
import Foundation

struct Snapshot: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Signed snapshots of public zones, for apps to bundle and start from with no network (docs/SCALING.md).",
        subcommands: [KeyGen.self, Make.self])

    struct KeyGen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Make a signing key (ECDSA P-256, PEM, readable by its owner only); prints the public key the app carries.")
        @Option(name: .shortAndLong, help: "Where to write the private key.") var out: String

        func run() throws {
            guard !FileManager.default.fileExists(atPath: self.out) else { throw ValidationError("\(self.out) exists; a key is never overwritten") }
            let key = P256.Signing.PrivateKey()
            guard FileManager.default.createFile(atPath: self.out, contents: Data(key.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
            else { throw ValidationError("cannot write \(self.out)") }
            print(key.publicKey.pemRepresentation)
            print("key id: \(PublicSnapshot.keyID(of: key.publicKey))")
        }
    }

    struct Make: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write public zones as a device's first sync would fetch them, with each zone's change token, compressed and signed.")
        @OptionGroup var database: DatabaseOptions
        @Option(help: "The signing key's PEM file (snapshot keygen).") var key: String
        @Option(name: .shortAndLong, help: "The snapshot file to write.") var out: String
        @Option(help: "A public zone to include (repeatable; default: every listed zone, seasons of games included).") var zone: [String] = []
        @Option(help: "Container whose public database is read.") var container = "iCloud.com.sportstime.app"
        @Option(help: "development or production.") var environment = "development"

        func run() async throws {
            guard let pem = FileManager.default.contents(atPath: self.key) else { throw ValidationError("cannot read \(self.key)") }
            let signingKey = try P256.Signing.PrivateKey(pemRepresentation: String(decoding: pem, as: UTF8.self))
            let made = try await Live(self.database).run { live, logger in
                try await makePublicSnapshot(
                    container: self.container, environment: self.environment, zones: self.zone.isEmpty ? nil : self.zone,
                    records: try await live.stores.records(logger: logger), signingKey: signingKey, logger: logger)
            }
            try Data(made.file).write(to: URL(fileURLWithPath: self.out), options: .atomic)
            print("Wrote \(self.out): \(made.zones) zone(s), \(made.records) record(s), \(made.file.count) bytes, key id \(PublicSnapshot.keyID(of: signingKey.publicKey)).")
        }
    }
}
