import CloudCore
import Foundation

/// The canonical sports dataset as built by `scripts/dataset/build.py` into `Resources/canonical/`.
public struct CanonicalDataset: Sendable {
    public struct League: Codable, Sendable { public var id, name, abbreviation, sport: String }
    public struct Conference: Codable, Sendable { public var id, leagueId, name: String }
    public struct Division: Codable, Sendable { public var id, leagueId, name: String; public var conferenceId: String? }
    public struct Stadium: Codable, Sendable {
        public var id, name, city, country, timeZone: String
        public var state: String?
        public var latitude, longitude: Double
        public var capacity, yearOpened: Int?
        public var deprecatedAt: String?
        public var sports: [String]
        /// Ids an existing app install holds for the venue (the seed's `stadiumUUIDs`).
        public var legacyIds: [String]?
    }
    public struct Team: Codable, Sendable {
        public var id, leagueId, name, city, homeStadiumId: String
        public var conferenceId, divisionId, abbreviation: String?
        public var yearFounded, firstSeason: Int?
    }
    public struct StadiumAlias: Codable, Sendable { public var id, stadiumId, name: String; public var validFrom, validUntil: String? }
    public struct TeamAlias: Codable, Sendable { public var id, teamId, name: String; public var city, abbreviation, validFrom, validUntil: String? }
    public struct TeamVenue: Codable, Sendable { public var id, teamId, stadiumId: String; public var validFrom, validUntil: String? }
    /// An achievement definition (`achievements.json`, built by `scripts/dataset/achievements.py`).
    public struct AchievementDefinition: Codable, Sendable {
        public var id, name, description, requirement: String
        public var count: Int?
        public var leagueId, conferenceId, divisionId: String?
    }
    /// One game of a league-season file in `games/` (format: Resources/DATASET.md, "Games").
    public struct Game: Codable, Sendable {
        public var id, leagueId, seasonLabel, gameType, startTime, localDate, homeTeamId, awayTeamId, stadiumId, status, source: String
        public var season: Int
        public var timeTBD, neutralSite: Bool
        public var homeScore, awayScore: Int?
        public var sourceGameId: String?
    }

    public var leagues: [League]
    public var conferences: [Conference]
    public var divisions: [Division]
    public var stadiums: [Stadium]
    public var teams: [Team]
    public var stadiumAliases: [StadiumAlias]
    public var teamAliases: [TeamAlias]
    public var teamVenues: [TeamVenue]
    public var achievements: [AchievementDefinition] = []
    /// Games by league-season file name (`mlb_2025`), each file a public zone of its own (`games_mlb_2025`).
    public var games: [String: [Game]] = [:]

    /// Reads every file of the dataset folder; a missing or malformed file is reported by name. `gameSeasons`
    /// picks league-season files of `games/` by name (`["mlb_2025"]`); nil reads them all, `[]` none.
    public static func load(from directory: String, gameSeasons: Set<String>? = nil) throws -> CanonicalDataset {
        func read<T: Decodable>(_ file: String) throws -> [T] {
            let path = directory + "/" + file
            guard let data = FileManager.default.contents(atPath: path) else { throw CanonError("cannot read \(path)") }
            do {
                return try JSONDecoder().decode([T].self, from: data)
            } catch {
                throw CanonError("\(path) is not a valid dataset file: \(error)")
            }
        }
        var dataset = CanonicalDataset(
            leagues: try read("leagues.json"), conferences: try read("conferences.json"), divisions: try read("divisions.json"),
            stadiums: try read("stadiums.json"), teams: try read("teams.json"), stadiumAliases: try read("stadium_aliases.json"),
            teamAliases: try read("team_aliases.json"), teamVenues: try read("team_venues.json"))
        dataset.achievements = try read("achievements.json")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/games")) ?? []
        for file in files.sorted() where file.hasSuffix(".json") {
            let season = String(file.dropLast(5))
            guard gameSeasons?.contains(season) ?? true else { continue }
            dataset.games[season] = try read("games/" + file)
        }
        if let gameSeasons, let missing = gameSeasons.subtracting(dataset.games.keys).sorted().first {
            throw CanonError("\(directory)/games/\(missing).json does not exist")
        }
        return dataset
    }
}

/// A problem with canonical data, reported to the operator as it is.
public struct CanonError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
