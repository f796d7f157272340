import ArgumentParser
import Foundation
import StadiumCloudClient

struct Achievements: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List achievements: earned ones with their day, then the rest (computed on this device, synced as records).")
    @OptionGroup var options: StoreOptions
    @Flag(help: "Only the earned ones.") var earned = false

    func run() async throws {
        try await reporting {
            let all = try self.options.open().achievements()
            for badge in all.filter(\.isEarned) {
                print("✔ \(formatDate(badge.earnedAt ?? 0))  \(badge.name)  (\(badge.visitRecordNames.count) visits)")
            }
            guard !self.earned else { return }
            for badge in all where !badge.isEarned {
                print("  \(badge.name)  \(badge.description)\(badge.revokedAt != nil ? "  [revoked]" : "")")
            }
        }
    }
}

struct Progress: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Venues visited and still to visit in a league, conference or division.")
    @OptionGroup var options: StoreOptions
    @Argument(help: "The league id, e.g. league_mlb.") var league: String
    @Option(help: "A conference id.") var conference: String?
    @Option(help: "A division id, e.g. division_mlb_nl_west.") var division: String?

    func run() async throws {
        try await reporting {
            let client = try self.options.open()
            let progress = try client.progress(league: self.league, conference: self.conference, division: self.division)
            print("\(progress.visited.count) of \(progress.total) venues visited")
            for id in progress.visited { print("✔ \(try client.stadium(id)?.name ?? id)") }
            for id in progress.remaining { print("  \(try client.stadium(id)?.name ?? id)") }
        }
    }
}
