import ArgumentParser
import Foundation
import SportsDomain
import StadiumCloudClient

struct Seasons: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or set the league-seasons whose games this device keeps (mlb_2025, nba_2025 = 2025-26).",
        discussion: "Each season is a public zone synced with its own change token; `sync` fetches them. Seasons left out are removed here.")
    @OptionGroup var options: StoreOptions
    @Argument(help: "The seasons to follow; leave out to show them.") var seasons: [String] = []
    @Flag(help: "Follow no season.") var none = false

    func run() async throws {
        try await reporting {
            let client = try self.options.open()
            if !self.seasons.isEmpty || self.none { try await client.follow(seasons: self.seasons) }
            print(client.followedSeasons.isEmpty ? "no seasons followed" : client.followedSeasons.joined(separator: " "))
        }
    }
}

struct Games: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Games on a local day, from the seasons this device keeps (works offline).")
    @OptionGroup var options: StoreOptions
    @Argument(help: "The day, YYYY-MM-DD (the venue's local day).") var date: String
    @Option(help: "Only this league (mlb, nba, nfl, nhl, mls, nwsl, wnba); repeatable.") var league: [String] = []

    func run() async throws {
        try await reporting {
            let client = try self.options.open()
            let games = try client.games(on: self.date, leagues: self.league.isEmpty ? nil : self.league)
            if games.isEmpty {
                print("no games on \(self.date) in the followed seasons (\(client.followedSeasons.joined(separator: " ")))")
            }
            for game in games {
                let away = try client.teamName(game.awayTeam, on: game.startTime) ?? game.awayTeam
                let home = try client.teamName(game.homeTeam, on: game.startTime) ?? game.homeTeam
                let venue = try client.stadiumName(game.stadium, on: game.startTime) ?? game.stadium
                let time = game.timeTBD ? "TBD" : Date(timeIntervalSince1970: Double(game.startTime) / 1000).formatted(.iso8601)
                let score = game.homeScore.map { " \(game.awayScore ?? 0)–\($0)" } ?? ""
                print("\(time)  \(away) at \(home)\(score)  \(venue)  [\(game.status)]  \(game.id)")
            }
        }
    }
}

struct Match: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Which game a photo shows: GPS and capture time → venues and their games (asks the server).")
    @OptionGroup var options: StoreOptions
    @Argument(help: "Latitude.") var latitude: Double
    @Argument(help: "Longitude.") var longitude: Double
    @Argument(help: "Capture time, 2024-07-04T18:05:00Z (UTC) or milliseconds since 1970.") var time: String
    @Option(help: "Only venues of this sport (baseball, basketball, ice_hockey, american_football, soccer).") var sport: String?

    func run() async throws {
        guard let ms = Int64(self.time) ?? ISO8601DateFormatter().date(from: self.time).map({ Int64($0.timeIntervalSince1970 * 1000) }) else {
            throw ValidationError("TIME must be like 2024-07-04T18:05:00Z or milliseconds since 1970")
        }
        try await reporting {
            let found = try await self.options.open().match(latitude: self.latitude, longitude: self.longitude, time: ms, sport: self.sport)
            print(found.games.isEmpty ? "manual: no game at a venue near that point that day or the day before or after" : found.verdict)
            for match in found.games {
                print(
                    "\(match.verdict)  \(match.confidence)  \(match.summary)  at \(match.stadiumName)  (\(match.minutesFromStart) min after the start)  \(match.gameID)"
                )
            }
        }
    }
}
