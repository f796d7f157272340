import ArgumentParser
import CloudCore
import CloudSync
import Crypto
import Foundation
import StadiumCloudClient

struct Bootstrap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a signed snapshot of public data (stadiumcloud snapshot make) with no network; the next sync fetches only what changed since.")
    @OptionGroup var options: StoreOptions
    @Argument(help: "The snapshot file.") var snapshot: String
    @Option(help: "A public key (PEM file) the snapshot may be signed with (repeatable).") var key: [String]

    func run() async throws {
        let keys = try self.key.map { path -> P256.Signing.PublicKey in
            guard let pem = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
            return try P256.Signing.PublicKey(pemRepresentation: String(decoding: pem, as: UTF8.self))
        }
        try await reporting {
            do {
                let stored = try await self.options.open().bootstrap(fromSnapshot: URL(fileURLWithPath: self.snapshot), trustedKeys: keys)
                print("bootstrapped: \(stored) record(s)")
            } catch let error as ArchiveError {
                FileHandle.standardError.write(Data("error: \(error)\n".utf8))
                throw ExitCode.failure
            }
        }
    }
}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Fetch canonical and private changes, then send queued edits.")
    @OptionGroup var options: StoreOptions
    @Flag(help: "Send the edits the server refused once more (see status).") var retryRefused = false
    @Flag(help: "Keep syncing whenever the server says something changed (changes/wait), until interrupted.") var live = false

    func run() async throws {
        try await reporting {
            let client = try self.options.open()
            if self.retryRefused { try client.store.retryRefusedEdits() }
            if self.live {
                // Written at once, line by line, also into a pipe or a file (print would buffer them).
                @Sendable func line(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
                line("syncing live; Ctrl-C to stop")
                await client.syncContinuously { result in
                    switch result {
                    case .success(let report):
                        line("synced: \(report.fetched) changed and \(report.deleted) removed here, \(report.sent) sent, \(report.waiting) waiting")
                    case .failure(let error):
                        line("sync failed (trying again): \(error)")
                    }
                }
                return
            }
            let report = try await client.sync { progressLine(describe($0)) }
            progressLine(
                "synced: \(report.fetched) changed and \(report.deleted) removed here, \(report.sent) sent, \(report.merged) merged, \(report.waiting) waiting",
                done: true)
            if !report.zonesReset.isEmpty { print("refetched after an expired change token: \(report.zonesReset.joined(separator: ", "))") }
            for refused in report.refused { print("refused by the server: \(refused)") }
            if !client.isSignedIn { print("signed out: only the public database was synced; `signin` to send the queued edits") }
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the session, the store and the queued edits.")
    @OptionGroup var options: StoreOptions

    func run() async throws {
        try await reporting {
            let client = try self.options.open()
            let counts = try client.store.pendingCounts()
            print("store: \(self.options.path)")
            print("signed in: \(client.isSignedIn ? "yes" : "no")")
            print("venues: \(try client.stadiums().count), visits: \(try client.visits().count), photos: \(try client.photos().count)")
            print("queued edits: \(counts.waiting) waiting, \(counts.refused) refused")
            for refused in try client.store.refusedEdits() { print("  \(refused.recordName): \(refused.error)") }
        }
    }
}
