import CloudCore

/// How a sport counts a season: the columns of a record, and what ranks teams (docs/CANONICAL.md, "Records and
/// standings").
public enum RecordFormat: String, Sendable, CaseIterable {
    /// Baseball, basketball: ranked by win percentage.
    case winsLosses = "W-L"
    /// Hockey: an overtime or shootout loss is its own column; ranked by points (2 a win, 1 an OTL).
    case winsLossesOvertimeLosses = "W-L-OTL"
    /// Soccer: ranked by points (3 a win, 1 a draw).
    case winsDrawsLosses = "W-D-L"
    /// American football: a tie is half a win in the percentage.
    case winsLossesTies = "W-L-T"

    public init(sport: String?) {
        switch sport {
        case "ice_hockey": self = .winsLossesOvertimeLosses
        case "soccer": self = .winsDrawsLosses
        case "american_football": self = .winsLossesTies
        default: self = .winsLosses
        }
    }

    /// True when points, not win percentage, rank teams.
    public var ranksByPoints: Bool { self == .winsLossesOvertimeLosses || self == .winsDrawsLosses }
}

/// A team's regular-season record: the columns its league's format has (the others stay 0).
public struct SeasonRecord: Sendable, Equatable {
    public var format: RecordFormat
    public var wins = 0, losses = 0
    /// Hockey's overtime and shootout losses, soccer's draws, American football's ties.
    public var overtimeLosses = 0, draws = 0, ties = 0

    public init(format: RecordFormat, wins: Int = 0, losses: Int = 0, overtimeLosses: Int = 0, draws: Int = 0, ties: Int = 0) {
        (self.format, self.wins, self.losses) = (format, wins, losses)
        (self.overtimeLosses, self.draws, self.ties) = (overtimeLosses, draws, ties)
    }

    public var gamesPlayed: Int { self.wins + self.losses + self.overtimeLosses + self.draws + self.ties }

    /// As the league writes it: `8-2`, NHL `8-2-1` (W-L-OTL), soccer `8-1-2` (W-D-L), NFL `8-2-1` (W-L-T).
    public var text: String {
        switch self.format {
        case .winsLosses: "\(self.wins)-\(self.losses)"
        case .winsLossesOvertimeLosses: "\(self.wins)-\(self.losses)-\(self.overtimeLosses)"
        case .winsDrawsLosses: "\(self.wins)-\(self.draws)-\(self.losses)"
        case .winsLossesTies: "\(self.wins)-\(self.losses)-\(self.ties)"
        }
    }

    /// Hockey's and soccer's table points; nil for leagues ranked by percentage.
    public var points: Int? {
        switch self.format {
        case .winsLossesOvertimeLosses: self.wins * 2 + self.overtimeLosses
        case .winsDrawsLosses: self.wins * 3 + self.draws
        case .winsLosses, .winsLossesTies: nil
        }
    }

    /// Wins (and half the ties) per game played, to three places; 0 before the first game.
    public var winPercentage: Double {
        guard self.gamesPlayed > 0 else { return 0 }
        return ((Double(self.wins) + Double(self.ties) / 2) / Double(self.gamesPlayed) * 1000).rounded() / 1000
    }

    /// What ranks teams: points, or win percentage.
    var rankingValue: Double { self.points.map(Double.init) ?? self.winPercentage }

    /// Counts a final for `team`: a win, a loss, or the format's third column (an NHL loss in overtime or a shootout,
    /// a soccer draw, an NFL tie). A level final in a league without draws or ties (none should exist) counts nowhere.
    mutating func count(_ game: Game, for team: String) {
        guard let home = game.homeScore, let away = game.awayScore else { return }
        let (own, other) = team == game.homeTeam ? (home, away) : (away, home)
        if own > other {
            self.wins += 1
        } else if own < other {
            if self.format == .winsLossesOvertimeLosses && game.endedInOvertime { self.overtimeLosses += 1 } else { self.losses += 1 }
        } else if self.format == .winsDrawsLosses {
            self.draws += 1
        } else if self.format == .winsLossesTies {
            self.ties += 1
        }
    }
}

extension Game {
    /// A regular-season final with both scores: the games a record counts. Playoffs, play-ins and cup finals
    /// (`gameType` other than regular) do not; the NBA Cup's group games are regular-season games.
    public var countsInRecords: Bool {
        self.gameType == "regular" && self.status == Game.Status.final.rawValue && self.homeScore != nil && self.awayScore != nil
    }

    /// Decided in overtime or a shootout, as a score feed reports it: `statusDetail` `Final/OT`, `Final/2OT`, `Final/SO`,
    /// or a period past the third. The dataset's finals carry neither, so they count as decided in regulation.
    public var endedInOvertime: Bool {
        (self.statusDetail.map { $0.hasPrefix("Final") && ($0.hasSuffix("OT") || $0.hasSuffix("SO")) } ?? false) || (self.period ?? 0) > 3
    }
}

/// A team's place in a league: what a standings table groups it by (the team's current division and conference).
public struct TeamPlace: Sendable, Equatable {
    public var team: NamedID
    public var abbreviation: String?
    public var conference, division: String?

    public init(team: NamedID, abbreviation: String?, conference: String?, division: String?) {
        (self.team, self.abbreviation, self.conference, self.division) = (team, abbreviation, conference, division)
    }
}

/// Records of a league-season's teams, counted final by final: the server adds a day's finals and reads the
/// standings before the next day, in one pass over a season.
public struct SeasonTally: Sendable {
    public let format: RecordFormat
    public private(set) var records: [String: SeasonRecord]

    public init(format: RecordFormat, teams: some Sequence<String>) {
        self.format = format
        self.records = Dictionary(teams.map { ($0, SeasonRecord(format: format)) }, uniquingKeysWith: { first, _ in first })
    }

    /// Counts the game when it is a regular-season final (`Game.countsInRecords`); ignores it otherwise.
    public mutating func count(_ game: Game) {
        guard game.countsInRecords else { return }
        for team in [game.homeTeam, game.awayTeam] { self.records[team, default: SeasonRecord(format: self.format)].count(game, for: team) }
    }
}

/// A league's standings on a day: every team's regular-season record from the finals of earlier days, ranked in the
/// league, its conference and its division. The `canonical/standings` answer and the source of the game cards'
/// records and ranks; the server writes it and devices read it here.
public struct Standings: Sendable, Equatable {
    /// A team in a table, with its rank there.
    public struct Entry: Sendable, Equatable {
        public var team: NamedID
        public var abbreviation: String?
        public var logo: String
        public var record: SeasonRecord
        /// 1 for the first; teams level on points (or percentage) share a rank: 1, 2, 2, 4.
        public var rank: Int

        public init(team: NamedID, abbreviation: String?, logo: String, record: SeasonRecord, rank: Int) {
            (self.team, self.abbreviation, self.logo, self.record, self.rank) = (team, abbreviation, logo, record, rank)
        }
    }

    /// A conference or division table; a conference lists its divisions.
    public struct Group: Sendable, Equatable {
        public var canonicalId: String
        public var teams: [Entry]
        public var divisions: [Group]

        public init(canonicalId: String, teams: [Entry], divisions: [Group] = []) {
            (self.canonicalId, self.teams, self.divisions) = (canonicalId, teams, divisions)
        }
    }

    public var league: String
    public var season: Int
    public var seasonLabel: String
    /// Finals of days before this one are counted.
    public var date: CivilDate
    public var format: RecordFormat
    /// The whole league, ranked.
    public var teams: [Entry]
    /// Conferences by id, each with its divisions by id; empty for a league of one table (NWSL).
    public var conferences: [Group]

    public init(
        league: String, season: Int, seasonLabel: String, date: CivilDate, format: RecordFormat, teams: [Entry], conferences: [Group]
    ) {
        (self.league, self.season, self.seasonLabel, self.date, self.format) = (league, season, seasonLabel, date, format)
        (self.teams, self.conferences) = (teams, conferences)
    }

    /// Ranks `places` by `records` (a team without one has played no final yet) in the league, each conference and
    /// each division.
    public init(
        league: String, season: Int, seasonLabel: String, date: CivilDate, format: RecordFormat, places: [TeamPlace],
        records: [String: SeasonRecord]
    ) {
        func table(_ places: [TeamPlace]) -> [Entry] {
            let sorted = places.map { place in (place, records[place.team.canonicalId] ?? SeasonRecord(format: format)) }.sorted { a, b in
                // Level teams share a rank; within it they are listed by wins, then fewer losses, then id.
                (-a.1.rankingValue, -a.1.wins, a.1.losses, a.0.team.canonicalId) < (-b.1.rankingValue, -b.1.wins, b.1.losses, b.0.team.canonicalId)
            }
            var entries: [Entry] = []
            for (index, (place, record)) in sorted.enumerated() {
                let rank = index > 0 && entries[index - 1].record.rankingValue == record.rankingValue ? entries[index - 1].rank : index + 1
                entries.append(
                    Entry(
                        team: place.team, abbreviation: place.abbreviation, logo: TeamCard.logo(of: place.team.canonicalId), record: record,
                        rank: rank))
            }
            return entries
        }
        let byConference = Dictionary(grouping: places.filter { $0.conference != nil }, by: { $0.conference! })
        let conferences = byConference.keys.sorted().map { conference in
            let members = byConference[conference]!
            let byDivision = Dictionary(grouping: members.filter { $0.division != nil }, by: { $0.division! })
            return Group(
                canonicalId: conference, teams: table(members),
                divisions: byDivision.keys.sorted().map { Group(canonicalId: $0, teams: table(byDivision[$0]!)) })
        }
        self.init(
            league: league, season: season, seasonLabel: seasonLabel, date: date, format: format, teams: table(places), conferences: conferences)
    }

    /// A team's card on this day: its record and its ranks in division, conference and league.
    public func card(of team: String) -> TeamCard? {
        guard let entry = self.teams.first(where: { $0.team.canonicalId == team }) else { return nil }
        let conference = self.conferences.first { $0.teams.contains { $0.team.canonicalId == team } }
        let division = conference?.divisions.first { $0.teams.contains { $0.team.canonicalId == team } }
        func rank(_ group: Group?) -> Int? { group?.teams.first { $0.team.canonicalId == team }?.rank }
        return TeamCard(
            abbreviation: entry.abbreviation, logo: entry.logo, record: entry.record.text,
            standing: TeamCard.Standing(division: rank(division), conference: rank(conference), league: entry.rank))
    }

    public var json: JSONValue {
        func entry(_ entry: Entry) -> JSONValue {
            let record = entry.record
            var json: [String: JSONValue] = [
                "canonicalId": .string(entry.team.canonicalId), "name": .string(entry.team.name), "logo": .string(entry.logo),
                "rank": .int(Int64(entry.rank)), "record": .string(record.text), "wins": .int(Int64(record.wins)),
                "losses": .int(Int64(record.losses)), "gamesPlayed": .int(Int64(record.gamesPlayed)), "winPercentage": .double(record.winPercentage),
            ]
            if let abbreviation = entry.abbreviation { json["abbreviation"] = .string(abbreviation) }
            switch record.format {
            case .winsLosses: break
            case .winsLossesOvertimeLosses: json["overtimeLosses"] = .int(Int64(record.overtimeLosses))
            case .winsDrawsLosses: json["draws"] = .int(Int64(record.draws))
            case .winsLossesTies: json["ties"] = .int(Int64(record.ties))
            }
            if let points = record.points { json["points"] = .int(Int64(points)) }
            return .object(json)
        }
        func table(_ group: Group) -> JSONValue {
            var json: [String: JSONValue] = ["canonicalId": .string(group.canonicalId), "teams": .array(group.teams.map(entry))]
            if !group.divisions.isEmpty { json["divisions"] = .array(group.divisions.map(table)) }
            return .object(json)
        }
        return [
            "league": .string(self.league), "season": .int(Int64(self.season)), "seasonLabel": .string(self.seasonLabel),
            "date": .string(self.date.description), "format": .string(self.format.rawValue), "teams": .array(self.teams.map(entry)),
            "conferences": .array(self.conferences.map(table)),
        ]
    }

    /// Reads an answer; nil without league, season, date or format. Entries it cannot read are left out.
    public init?(json: JSONValue) {
        guard let league = json["league"]?.stringValue, let season = json["season"]?.int64Value,
            let date = json["date"]?.stringValue.flatMap({ CivilDate($0) }),
            let format = json["format"]?.stringValue.flatMap(RecordFormat.init(rawValue:))
        else { return nil }
        func entries(_ json: JSONValue?) -> [Entry] {
            (json?.arrayValue ?? []).compactMap { entry in
                guard let team = NamedID(json: entry) else { return nil }
                func int(_ key: String) -> Int { Int(entry[key]?.int64Value ?? 0) }
                let record = SeasonRecord(
                    format: format, wins: int("wins"), losses: int("losses"), overtimeLosses: int("overtimeLosses"), draws: int("draws"),
                    ties: int("ties"))
                return Entry(
                    team: team, abbreviation: entry["abbreviation"]?.stringValue,
                    logo: entry["logo"]?.stringValue ?? TeamCard.logo(of: team.canonicalId), record: record, rank: int("rank"))
            }
        }
        func table(_ json: JSONValue) -> Group? {
            guard let id = json["canonicalId"]?.stringValue else { return nil }
            return Group(canonicalId: id, teams: entries(json["teams"]), divisions: (json["divisions"]?.arrayValue ?? []).compactMap(table))
        }
        self.init(
            league: league, season: Int(season), seasonLabel: json["seasonLabel"]?.stringValue ?? String(season), date: date, format: format,
            teams: entries(json["teams"]), conferences: (json["conferences"]?.arrayValue ?? []).compactMap(table))
    }
}
