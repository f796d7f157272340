import CloudCore
import SportsDomain
import Logging

/// `canonical/games`, `canonical/gameDates`, `canonical/match` and `canonical/standings`: games by local day with
/// their teams' cards, the days that have games, photo-to-game matching, and a league's standings on a day
/// (docs/CANONICAL.md, "Games").
extension CanonicalEndpoints {
    /// The longest range one request may ask for: a season, with room for its playoffs.
    static let maxRangeDays = 366

    /// `{"date": "2025-03-18"}` or `{"from": …, "to": …}`, optionally narrowed by league(s), team and venue.
    func games(_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue {
        let catalog = try await self.catalog(for: database, logger: logger)
        let filter = try Self.filter(body, catalog)
        let days: ClosedRange<CivilDate>
        if body["date"] != nil {
            guard body["from"] == nil, body["to"] == nil else { throw CloudError.badRequest("give either date or from and to, not both") }
            let day = try Self.day(body["date"], "date")
            days = day...day
        } else if body["from"] != nil || body["to"] != nil {
            days = try Self.range(body)
        } else {
            throw CloudError.badRequest("date (YYYY-MM-DD) or from and to are required")
        }
        var games = catalog.games.games(on: days, filter)
        switch body["order"]?.stringValue {
        case nil, "startTime"?: break
        case "scoreboard"?: games.sort(by: Game.scoreboardOrder)
        case let other?: throw CloudError.badRequest("order must be startTime or scoreboard, not \(other)")
        }
        let cards = catalog.cards(of: games)
        return ["games": .array(games.map { Self.named($0, catalog, cards: cards[$0.id]).json })]
    }

    /// The local days with games for a league, team or venue, in a `month` (`2025-10`), a `season` (`2025`) or a
    /// `from`…`to` range.
    func gameDates(_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue {
        let catalog = try await self.catalog(for: database, logger: logger)
        var filter = try Self.filter(body, catalog)
        guard filter.leagues != nil || filter.team != nil || filter.venue != nil else {
            throw CloudError.badRequest("league, team or venue is required")
        }
        let days: ClosedRange<CivilDate>
        if let month = body["month"] {
            guard let text = month.stringValue, let first = CivilDate(text + "-01") else {
                throw CloudError.badRequest("month must be YYYY-MM")
            }
            days = first...CivilDate(year: first.year, month: first.month, day: CivilDate.daysIn(month: first.month, year: first.year))!
        } else if let season = body["season"] {
            let year = try Self.season(season)
            filter.season = year
            // The season's days: the team's league's, or, for a venue several leagues share, all of theirs.
            let teamLeague = filter.team.flatMap { catalog.directory.record($0)?.fields["league"]?.value["recordName"]?.stringValue }
            let leagues = filter.leagues ?? teamLeague.map { [$0] } ?? Set(catalog.sports.keys)
            let spans = leagues.compactMap { catalog.games.span(league: $0, season: year) }
            guard let first = spans.map(\.lowerBound).min(), let last = spans.map(\.upperBound).max() else { return ["dates": []] }
            days = first...last
        } else if body["from"] != nil || body["to"] != nil {
            days = try Self.range(body)
        } else {
            throw CloudError.badRequest("month (YYYY-MM), season (YYYY) or from and to are required")
        }
        return [
            "dates": .array(catalog.games.dates(in: days, filter).map { ["date": .string($0.date.description), "games": .int(Int64($0.games))] })
        ]
    }

    /// A league's standings before a day (`{"league": "nba", "date": "2026-11-28"}`): the season under way that day, or
    /// the last one over, or an explicit `season`; a season alone gives its final standings.
    func standings(_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue {
        let catalog = try await self.catalog(for: database, logger: logger)
        guard let name = body["league"] else {
            throw CloudError.badRequest("league is required (mlb, nba, nfl, nhl, mls, nwsl, wnba or a league id)")
        }
        let league = try Self.league(name, catalog)
        let day = try body["date"].map { try Self.day($0, "date") }
        let asked = try body["season"].map(Self.season)
        guard let season = asked ?? day.flatMap({ catalog.season(of: league, on: $0) }) else {
            guard let day else { throw CloudError.badRequest("date (YYYY-MM-DD) or season is required") }
            throw CloudError.badRequest("no \(league) season under way on \(day) or over in the year before it")
        }
        guard let span = catalog.games.span(league: league, season: season) else {
            throw CloudError.badRequest("no games of \(league)'s \(season) season")
        }
        // A season alone: after its last day, every final counted.
        let before = day ?? span.upperBound.adding(days: 1)
        return catalog.standings(league: league, season: season, before: [before])[before]?.json ?? [:]
    }

    /// GPS and capture time (+ optional sport and radius) → the games the photo may show, best first, and what the app
    /// does with it (`PhotoMatchRules`).
    func match(_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue {
        guard let latitude = body["latitude"]?.doubleValue, let longitude = body["longitude"]?.doubleValue,
            (-90...90).contains(latitude), (-180...180).contains(longitude)
        else { throw CloudError.badRequest("latitude (-90…90) and longitude (-180…180) are required") }
        let time: Int64
        switch body["time"] {
        case .some(let value) where value.stringValue != nil:
            guard let ms = GameTime.milliseconds(value.stringValue!) else {
                throw CloudError.badRequest("time must be YYYY-MM-DDTHH:MM:SSZ or milliseconds since 1970")
            }
            time = ms
        case .some(let value) where value.int64Value != nil && CanonicalDate.supported.contains(value.int64Value!):
            time = value.int64Value!
        default:
            throw CloudError.badRequest("time (the capture time: YYYY-MM-DDTHH:MM:SSZ or milliseconds since 1970) is required")
        }
        let radius = body["radius"]?.doubleValue ?? 5000
        guard radius > 0, radius <= 50_000 else { throw CloudError.badRequest("radius must be 1 to 50000 metres") }
        let sport = body["sport"]?.stringValue
        let catalog = try await self.catalog(for: database, logger: logger)
        if let sport, !catalog.sports.values.contains(sport) {
            throw CloudError.badRequest("unknown sport \(sport) (known: \(Set(catalog.sports.values).sorted().joined(separator: ", ")))")
        }
        let found = catalog.match(latitude: latitude, longitude: longitude, time: time, sport: sport, radius: radius)
        let cards = catalog.cards(of: found.matches.map(\.game))
        func venue(_ nearby: CanonicalDirectory.Nearby) -> MatchAnswer.Venue {
            MatchAnswer.Venue(
                venue: NamedID(canonicalId: nearby.canonicalId, name: catalog.directory.name(of: nearby.canonicalId, on: time) ?? nearby.name),
                distance: nearby.distanceMeters, confidence: nearby.confidence.rawValue)
        }
        return MatchAnswer(
            verdict: found.verdict.rawValue,
            matches: found.matches.map { match in
                MatchAnswer.Match(
                    confidence: match.confidence.rawValue, day: match.day.rawValue, verdict: match.verdict.rawValue,
                    minutesFromStart: match.minutesFromStart, venue: venue(match.venue),
                    game: Self.named(match.game, catalog, cards: cards[match.game.id]))
            },
            venues: found.venues.map(venue)
        ).json
    }

    /// A game with the teams' and venue's names of the game's date, and the teams' cards (`CanonicalCatalog.cards`).
    static func named(_ game: Game, _ catalog: CanonicalCatalog, cards: (home: TeamCard, away: TeamCard)?) -> NamedGame {
        NamedGame(game: game, cards: cards) { catalog.directory.name(of: $0, on: game.startTime) ?? $0 }
    }

    /// `league` or `leagues`, `team` and `venue`, each checked against the catalog.
    static func filter(_ body: JSONValue, _ catalog: CanonicalCatalog) throws -> GameIndex.Filter {
        var filter = GameIndex.Filter()
        var leagueNames: [JSONValue] = []
        if let league = body["league"] { leagueNames.append(league) }
        if let leagues = body["leagues"] {
            guard let list = leagues.arrayValue else { throw CloudError.badRequest("leagues must be a list such as [\"mlb\", \"nba\"]") }
            leagueNames += list
        }
        if !leagueNames.isEmpty {
            filter.leagues = Set(try leagueNames.map { try Self.league($0, catalog) })
        }
        for (key, type) in [("team", "Team"), ("venue", "Stadium")] {
            guard let value = body[key] else { continue }
            guard let id = value.stringValue, catalog.directory.record(id)?.recordType == type else {
                throw CloudError.badRequest(
                    "unknown \(key) \(value.stringValue ?? "\(value)") (use a canonical id such as \(key == "team" ? "team_mlb_cubs" : "stadium_mlb_wrigley_field"))"
                )
            }
            if key == "team" { filter.team = id } else { filter.venue = id }
        }
        return filter
    }

    /// The league id `mlb` or `league_mlb` names.
    static func league(_ value: JSONValue, _ catalog: CanonicalCatalog) throws -> String {
        guard let text = value.stringValue, let id = catalog.league(text) else {
            throw CloudError.badRequest("unknown league \(value.stringValue ?? "\(value)") (use mlb, nba, nfl, nhl, mls, nwsl, wnba or a league id)")
        }
        return id
    }

    /// `from` and `to` (inclusive local days), at most `maxRangeDays` apart.
    static func range(_ body: JSONValue) throws -> ClosedRange<CivilDate> {
        let from = try Self.day(body["from"], "from")
        let to = try Self.day(body["to"], "to")
        guard from <= to else { throw CloudError.badRequest("from (\(from)) is after to (\(to))") }
        guard to.daysSince1970 - from.daysSince1970 < Self.maxRangeDays else {
            throw CloudError.badRequest("a range may cover at most \(Self.maxRangeDays) days (one season); ask season by season")
        }
        return from...to
    }

    /// A season by its first year (`2025` is NBA 2025-26).
    static func season(_ value: JSONValue) throws -> Int {
        guard let year = value.int64Value, (1000...9999).contains(year) else { throw CloudError.badRequest("season must be a year such as 2025") }
        return Int(year)
    }

    static func day(_ value: JSONValue?, _ name: String) throws -> CivilDate {
        guard let text = value?.stringValue, let day = CivilDate(text) else { throw CloudError.badRequest("\(name) must be a date YYYY-MM-DD") }
        return day
    }
}
