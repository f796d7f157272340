import CloudCore

/// A canonical id with its name of a given date.
public struct NamedID: Sendable, Equatable {
    public var canonicalId, name: String

    public init(canonicalId: String, name: String) { (self.canonicalId, self.name) = (canonicalId, name) }

    public var json: JSONValue { ["canonicalId": .string(self.canonicalId), "name": .string(self.name)] }

    public init?(json: JSONValue?) {
        guard let id = json?["canonicalId"]?.stringValue else { return nil }
        self.init(canonicalId: id, name: json?["name"]?.stringValue ?? id)
    }
}

/// What a scoreboard card shows of a team beside its name: its abbreviation of the game's date, the name of its
/// logo in the app's bundle, its regular-season record coming into the game and its ranks (docs/CANONICAL.md,
/// "Records and standings").
public struct TeamCard: Sendable, Equatable {
    /// Ranks on the day (1 is first; level teams share one): in the team's division and conference when it has them.
    public struct Standing: Sendable, Equatable {
        public var division, conference: Int?
        public var league: Int

        public init(division: Int?, conference: Int?, league: Int) { (self.division, self.conference, self.league) = (division, conference, league) }
    }

    public var abbreviation: String?
    public var logo: String
    /// `8-2`, in the league's format (`RecordFormat`).
    public var record: String?
    public var standing: Standing?

    public init(abbreviation: String?, logo: String, record: String?, standing: Standing?) {
        (self.abbreviation, self.logo, self.record, self.standing) = (abbreviation, logo, record, standing)
    }

    /// The image asset a team's logo is in the app's bundle: `logo_` and its canonical id (`logo_team_nba_celtics`).
    /// The server ships no images; a franchise keeps its asset name through renames, as it keeps its id.
    public static func logo(of team: String) -> String { "logo_" + team }

    /// The card's keys, written into the team's object beside `canonicalId` and `name`.
    var fields: [String: JSONValue] {
        var json: [String: JSONValue] = ["logo": .string(self.logo)]
        if let abbreviation = self.abbreviation { json["abbreviation"] = .string(abbreviation) }
        if let record = self.record { json["record"] = .string(record) }
        if let standing = self.standing {
            var ranks: [String: JSONValue] = ["league": .int(Int64(standing.league))]
            if let division = standing.division { ranks["division"] = .int(Int64(division)) }
            if let conference = standing.conference { ranks["conference"] = .int(Int64(conference)) }
            json["standing"] = .object(ranks)
        }
        return json
    }

    /// The card in a team's object; nil when it has none (an answer of a server before cards).
    public init?(json: JSONValue?) {
        guard let json, let logo = json["logo"]?.stringValue else { return nil }
        let standing = json["standing"].flatMap { ranks in
            ranks["league"]?.int64Value.map { league in
                Standing(
                    division: ranks["division"]?.int64Value.map { Int($0) }, conference: ranks["conference"]?.int64Value.map { Int($0) },
                    league: Int(league))
            }
        }
        self.init(abbreviation: json["abbreviation"]?.stringValue, logo: logo, record: json["record"]?.stringValue, standing: standing)
    }
}

/// A game as `canonical/games` and `canonical/match` answer it: the game with its teams' and venue's names of the
/// game's date, and the teams' cards. The server writes it and devices read it here, so the two cannot disagree on a
/// key.
public struct NamedGame: Sendable, Equatable {
    public var game: Game
    public var homeTeam, awayTeam, venue: NamedID
    /// The teams' cards, in the team objects of the answer.
    public var homeCard, awayCard: TeamCard?

    public init(game: Game, cards: (home: TeamCard, away: TeamCard)? = nil, name: (String) -> String) {
        self.game = game
        (self.homeTeam, self.awayTeam, self.venue) = (
            NamedID(canonicalId: game.homeTeam, name: name(game.homeTeam)), NamedID(canonicalId: game.awayTeam, name: name(game.awayTeam)),
            NamedID(canonicalId: game.stadium, name: name(game.stadium))
        )
        (self.homeCard, self.awayCard) = (cards?.home, cards?.away)
    }

    public var json: JSONValue {
        let game = self.game
        var json: [String: JSONValue] = [
            "canonicalId": .string(game.id), "league": .string(game.league), "season": .int(Int64(game.season)),
            "seasonLabel": .string(game.seasonLabel), "gameType": .string(game.gameType), "status": .string(game.status),
            "startTime": .int(game.startTime), "timeTBD": .bool(game.timeTBD), "localDate": .string(game.localDate.description),
            "neutralSite": .bool(game.neutralSite), "homeTeam": Self.team(self.homeTeam, self.homeCard),
            "awayTeam": Self.team(self.awayTeam, self.awayCard), "venue": self.venue.json,
        ]
        if let home = game.homeScore, let away = game.awayScore {
            json["homeScore"] = .int(Int64(home))
            json["awayScore"] = .int(Int64(away))
        }
        if let period = game.period { json["period"] = .int(Int64(period)) }
        if let clock = game.clock { json["clock"] = .string(clock) }
        if let detail = game.statusDetail { json["statusDetail"] = .string(detail) }
        if let updated = game.updatedAt { json["updatedAt"] = .int(updated) }
        if let broadcasts = game.broadcasts { json["broadcasts"] = .array(broadcasts.map(JSONValue.string)) }
        return .object(json)
    }

    /// A team's object: its id and name of the date, and its card's keys.
    static func team(_ team: NamedID, _ card: TeamCard?) -> JSONValue {
        guard case .object(let named) = team.json, let card else { return team.json }
        return .object(named.merging(card.fields) { named, _ in named })
    }

    public init?(json: JSONValue?) {
        guard let json, let id = json["canonicalId"]?.stringValue, let league = json["league"]?.stringValue,
            let season = json["season"]?.int64Value, let start = json["startTime"]?.int64Value,
            let day = json["localDate"]?.stringValue.flatMap({ CivilDate($0) }), let home = NamedID(json: json["homeTeam"]),
            let away = NamedID(json: json["awayTeam"]), let venue = NamedID(json: json["venue"])
        else { return nil }
        self.game = Game(
            id: id, league: league, season: Int(season), seasonLabel: json["seasonLabel"]?.stringValue ?? String(season),
            gameType: json["gameType"]?.stringValue ?? "regular", status: json["status"]?.stringValue ?? "scheduled", startTime: start,
            timeTBD: json["timeTBD"]?.boolValue ?? false, neutralSite: json["neutralSite"]?.boolValue ?? false, localDate: day,
            homeTeam: home.canonicalId, awayTeam: away.canonicalId, stadium: venue.canonicalId,
            homeScore: json["homeScore"]?.int64Value.map { Int($0) }, awayScore: json["awayScore"]?.int64Value.map { Int($0) })
        (self.game.period, self.game.clock) = (json["period"]?.int64Value.map { Int($0) }, json["clock"]?.stringValue)
        (self.game.statusDetail, self.game.updatedAt) = (json["statusDetail"]?.stringValue, json["updatedAt"]?.int64Value)
        self.game.broadcasts = json["broadcasts"]?.arrayValue?.compactMap(\.stringValue)
        (self.homeTeam, self.awayTeam, self.venue) = (home, away, venue)
        (self.homeCard, self.awayCard) = (TeamCard(json: json["homeTeam"]), TeamCard(json: json["awayTeam"]))
    }
}

/// The `canonical/match` answer: the games a photo may show, best first, and every venue near where it was taken.
public struct MatchAnswer: Sendable, Equatable {
    /// A venue near the photo, with its name of the capture's date.
    public struct Venue: Sendable, Equatable {
        public var venue: NamedID
        /// Metres from the photo, to a tenth.
        public var distance: Double
        /// `high`, `medium` or `low`, by distance.
        public var confidence: String

        public init(venue: NamedID, distance: Double, confidence: String) {
            (self.venue, self.distance, self.confidence) = (venue, (distance * 10).rounded() / 10, confidence)
        }
    }

    /// One game the photo may show.
    public struct Match: Sendable, Equatable {
        /// `exact` (at the venue during the game), `likely` or `possible`.
        public var confidence: String
        /// `same` or `adjacent` (`PhotoMatchRules.Day`).
        public var day: String
        /// This pair's `autoSelect`, `confirm` or `manual` (`PhotoMatchRules`).
        public var verdict: String
        /// Minutes from the game's start to the capture time (negative: before the start).
        public var minutesFromStart: Int
        public var venue: Venue
        public var game: NamedGame

        public init(confidence: String, day: String, verdict: String, minutesFromStart: Int, venue: Venue, game: NamedGame) {
            (self.confidence, self.day, self.verdict) = (confidence, day, verdict)
            (self.minutesFromStart, self.venue, self.game) = (minutesFromStart, venue, game)
        }
    }

    /// What the app does with the photo: `autoSelect` the first match, let the person `confirm` it or `choose` among
    /// the matches, or ask for the game by hand (`manual`).
    public var verdict: String
    public var matches: [Match]
    public var venues: [Venue]

    public init(verdict: String, matches: [Match], venues: [Venue]) { (self.verdict, self.matches, self.venues) = (verdict, matches, venues) }

    public var json: JSONValue {
        func venue(_ venue: Venue) -> JSONValue {
            [
                "canonicalId": .string(venue.venue.canonicalId), "name": .string(venue.venue.name), "distance": .double(venue.distance),
                "confidence": .string(venue.confidence),
            ]
        }
        return [
            "verdict": .string(self.verdict),
            "matches": .array(
                self.matches.map { match in
                    [
                        "confidence": .string(match.confidence), "day": .string(match.day), "verdict": .string(match.verdict),
                        "minutesFromStart": .int(Int64(match.minutesFromStart)), "venue": venue(match.venue), "game": match.game.json,
                    ]
                }),
            "venues": .array(self.venues.map(venue)),
        ]
    }

    /// Reads an answer; entries it cannot read are left out.
    public init(json: JSONValue) {
        func venue(_ json: JSONValue?) -> Venue? {
            guard let named = NamedID(json: json) else { return nil }
            return Venue(venue: named, distance: json?["distance"]?.doubleValue ?? 0, confidence: json?["confidence"]?.stringValue ?? "low")
        }
        self.matches = (json["matches"]?.arrayValue ?? []).compactMap { match in
            guard let venue = venue(match["venue"]), let game = NamedGame(json: match["game"]) else { return nil }
            return Match(
                confidence: match["confidence"]?.stringValue ?? "possible", day: match["day"]?.stringValue ?? "same",
                verdict: match["verdict"]?.stringValue ?? "manual", minutesFromStart: Int(match["minutesFromStart"]?.int64Value ?? 0),
                venue: venue, game: game)
        }
        self.verdict = json["verdict"]?.stringValue ?? "manual"
        self.venues = (json["venues"]?.arrayValue ?? []).compactMap(venue)
    }
}
