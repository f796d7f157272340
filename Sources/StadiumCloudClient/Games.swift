import CloudCore
import CloudSync
import Foundation
import SportsDomain

/// A game a photo may show, as the server's `canonical/match` ranks it.
public struct GameMatch: Sendable, Equatable {
    public var gameID: String
    public var stadiumID: String
    public var stadiumName: String
    /// `exact` (at the venue during the game), `likely` or `possible`.
    public var confidence: String
    /// `same` (the photo's local day, or during the game) or `adjacent` (the day before or after).
    public var day: String
    /// This game's `autoSelect`, `confirm` or `manual` by the app's rules (`PhotoMatchRules`).
    public var verdict: String
    public var minutesFromStart: Int
    /// The game as the server describes it: teams and venue with their names of that date, score, status.
    public var summary: String
}

/// The server's answer to "which game does this photo show", decided by the app's rules so every device agrees.
public struct PhotoMatches: Sendable, Equatable {
    /// `autoSelect` (take the first game), `confirm` (ask the person about the first game), `choose` (the person
    /// picks one of `games`) or `manual` (the person enters the game).
    public var verdict: String
    /// Best first.
    public var games: [GameMatch]
}

extension StadiumCloudClient {
    /// The league-seasons whose games this device keeps (`mlb_2025`, `nba_2025`), each a public zone synced with
    /// its own change token. Remembered in the store.
    public var followedSeasons: [String] { Self.followedSeasons(in: self.store) }

    static func followedSeasons(in store: LocalStore) -> [String] {
        (try? store.setting("gameSeasons"))?.split(separator: ",").map(String.init) ?? []
    }

    /// Keeps the games of `seasons` on this device from the next sync on; seasons no longer listed are removed
    /// from it (the server keeps them; `games(on:)` then answers from what is left, `match` still asks the server).
    public func follow(seasons: [String]) async throws {
        for season in seasons where !CanonicalSeason.isValid(season) {
            throw SyncError(code: "BAD_REQUEST", reason: "\(season) is not a league-season such as mlb_2025 or nba_2025", status: 0)
        }
        let unique = Array(Set(seasons)).sorted()
        try self.store.setSetting("gameSeasons", unique.joined(separator: ","))
        try await self.engine.follow(publicZones: Self.publicZones(seasons: unique))
    }

    static func publicZones(seasons: [String]) -> [String] { [defaultZoneName] + seasons.map { "games_" + $0 } }

    /// Games on a local day (`2025-03-18`) from the followed seasons, optionally of some leagues (`mlb` or
    /// `league_mlb`), by start time. Offline.
    public func games(on localDate: String, leagues: [String]? = nil) throws -> [Game] {
        let wanted = leagues.map { Set($0.map { $0.hasPrefix("league_") ? $0 : "league_" + $0.lowercased() }) }
        return try self.store.records(ofType: "Game", scope: .public, where: "localDate", equals: localDate).compactMap(Self.game(from:))
            .filter { wanted?.contains($0.league) ?? true }.sorted(by: Game.byStart)
    }

    /// A team's games between two local days (inclusive, `YYYY-MM-DD`), home and away, by start time. Offline.
    public func games(team teamID: String, from: String, through: String) throws -> [Game] {
        try self.games(referencing: teamID, in: ["homeTeam", "awayTeam"], from: from, through: through)
    }

    /// A venue's games between two local days (inclusive), by start time. Offline.
    public func games(stadium stadiumID: String, from: String, through: String) throws -> [Game] {
        try self.games(referencing: stadiumID, in: ["stadium"], from: from, through: through)
    }

    func games(referencing id: String, in fields: [String], from: String, through: String) throws -> [Game] {
        guard let first = CivilDate(from), let last = CivilDate(through) else {
            throw SyncError(code: "BAD_REQUEST", reason: "from and through must be dates YYYY-MM-DD", status: 0)
        }
        return try fields.flatMap { try self.store.records(ofType: "Game", scope: .public, referencing: id, in: $0) }.compactMap(Self.game(from:))
            .filter { first <= $0.localDate && $0.localDate <= last }.sorted(by: Game.byStart)
    }

    /// The team's name on a day (ms since 1970): the alias valid then, else its current name.
    public func teamName(_ id: String, on date: Int64) throws -> String? {
        try self.aliasName(of: id, aliasType: "TeamAlias", ownerField: "team", on: date)
            ?? self.store.record(id, scope: .public)?.fields["name"]?.value.stringValue
    }

    /// The games a photo taken at a place and time may show, best first, and what to do with them (the server's
    /// `canonical/match`, which knows every season, also those this device does not keep). `time` is ms since 1970.
    public func match(latitude: Double, longitude: Double, time: Int64, sport: String? = nil) async throws -> PhotoMatches {
        var body: [String: JSONValue] = ["latitude": .double(latitude), "longitude": .double(longitude), "time": .int(time)]
        if let sport { body["sport"] = .string(sport) }
        let answer = MatchAnswer(json: try await self.engine.service.call(.public, "canonical/match", .object(body)))
        let games = answer.matches.map { match in
            let game = match.game
            let score = game.game.homeScore.map { home in " \(game.game.awayScore ?? 0)–\(home)" } ?? ""
            return GameMatch(
                gameID: game.game.id, stadiumID: match.venue.venue.canonicalId, stadiumName: match.venue.venue.name, confidence: match.confidence,
                day: match.day, verdict: match.verdict, minutesFromStart: match.minutesFromStart,
                summary: "\(game.awayTeam.name) at \(game.homeTeam.name)\(score), \(game.game.localDate) (\(game.game.status))")
        }
        return PhotoMatches(verdict: answer.verdict, games: games)
    }

    /// A local day's games as the server's `canonical/games` answers them, by start time (also of seasons this device
    /// does not keep): each team with its scoreboard card (`NamedGame.homeCard`: abbreviation, logo asset name,
    /// record coming into the game, division and conference ranks) and the broadcasts a score feed listed.
    public func scoreboard(on localDate: String, leagues: [String]? = nil) async throws -> [NamedGame] {
        var body: [String: JSONValue] = ["date": .string(localDate)]
        if let leagues { body["leagues"] = .array(leagues.map(JSONValue.string)) }
        let answer = try await self.engine.service.call(.public, "canonical/games", .object(body))
        return (answer["games"]?.arrayValue ?? []).compactMap { NamedGame(json: $0) }
    }

    /// A league's standings before a local day (`canonical/standings`): the season under way then, or the last one
    /// over; with `season` alone, that season's final standings. Conferences and divisions come by canonical id: their
    /// names are in `conferences(inLeague:)` and `divisions(inLeague:)`.
    public func standings(league: String, on localDate: String? = nil, season: Int? = nil) async throws -> Standings {
        var body: [String: JSONValue] = ["league": .string(league)]
        if let localDate { body["date"] = .string(localDate) }
        if let season { body["season"] = .int(Int64(season)) }
        guard let standings = Standings(json: try await self.engine.service.call(.public, "canonical/standings", .object(body))) else {
            throw SyncError(code: SyncError.networkErrorCode, reason: "the standings answer could not be read", status: 0)
        }
        return standings
    }

    static func game(from record: LocalRecord) -> Game? { Game(recordName: record.recordName, fields: record.fields) }
}

/// League-season names: a league abbreviation and the season's start year (`mlb_2025`).
enum CanonicalSeason {
    static func isValid(_ season: String) -> Bool {
        let parts = season.split(separator: "_")
        return parts.count == 2 && parts[0].allSatisfy { $0.isLowercase && $0.isLetter } && parts[1].count == 4 && Int(parts[1]) != nil
    }
}
