import CloudCore
import Foundation
import SportsDomain
import Synchronization

/// Everything the canonical extensions answer from, built from one snapshot of the public database: names and
/// places (`CanonicalDirectory`), games (`GameIndex`), leagues and the venues' time zones.
public struct CanonicalCatalog: Sendable {
    public let directory: CanonicalDirectory
    public private(set) var games: GameIndex
    /// League id → sport (`league_mlb` → `baseball`).
    public let sports: [String: String]
    /// `mlb`, `MLB` and `league_mlb` → `league_mlb`.
    private let leagueIDs: [String: String]
    /// Venue id → its time zone.
    private let timeZones: [String: TimeZone]
    /// The ids of the live achievement definitions.
    public let achievements: Set<String>
    /// What a person's visits earn: the engine every device runs, on the same records.
    public let achievementEngine: AchievementEngine
    /// Each league's teams by their current name's last word(s) and code, normalized (`bruins`, `bos`): how score
    /// providers that give only a nickname or a code name a team.
    private let teamsByShortName: [String: [String: Set<String>]]
    /// Standings already counted from these games, by league, season and day: a scoreboard asked again before the
    /// games change costs look-ups. Every new catalog (any change of the games) starts with none.
    private(set) var countedStandings = CountedStandings()

    /// The record types the catalog is built from.
    public static let recordTypes = ["League", "Stadium", "Team", "StadiumAlias", "TeamAlias", "TeamVenue", "Game", "AchievementDefinition"]

    public init(records: [Record]) {
        self.init(records: records, games: GameIndex(records: records.filter { $0.recordType == "Game" }))
    }

    private init(records: [Record], games: GameIndex) {
        self.directory = CanonicalDirectory(records: records)
        self.achievementEngine = AchievementEngine(records: records)
        self.games = games
        var sports: [String: String] = [:]
        var leagueIDs: [String: String] = [:]
        var zones: [String: TimeZone] = [:]
        var known: [String: TimeZone] = [:]
        var achievements = Set<String>()
        var short: [String: [String: Set<String>]] = [:]
        for record in records where !record.deleted {
            switch record.recordType {
            case "Team":
                guard let league = record.fields["league"]?.value["recordName"]?.stringValue else { break }
                let words = (record.fields["name"]?.value.stringValue ?? "").split(separator: " ")
                var names = (1..<max(words.count, 1)).map { words.suffix($0).joined(separator: " ") }
                if let code = record.fields["abbreviation"]?.value.stringValue { names.append(code) }
                for name in names { short[league, default: [:]][CanonicalDirectory.normalize(name), default: []].insert(record.recordName) }
            case "League":
                sports[record.recordName] = record.fields["sport"]?.value.stringValue
                leagueIDs[record.recordName] = record.recordName
                if let abbreviation = record.fields["abbreviation"]?.value.stringValue { leagueIDs[abbreviation.lowercased()] = record.recordName }
            case "Stadium":
                if let name = record.fields["timeZone"]?.value.stringValue, let zone = known[name] ?? TimeZone(identifier: name) {
                    known[name] = zone
                    zones[record.recordName] = zone
                }
            case "AchievementDefinition" where record.fields["deprecatedAt"] == nil:
                achievements.insert(record.recordName)
            default: break
            }
        }
        (self.sports, self.leagueIDs, self.timeZones, self.achievements) = (sports, leagueIDs, zones, achievements)
        self.teamsByShortName = short
    }

    /// The one team of `league` whose current nickname or code is `name` ("Bruins", "BOS"); nil when none or several.
    public func team(shortName name: String, league: String) -> String? {
        guard let teams = self.teamsByShortName[league]?[CanonicalDirectory.normalize(name)], teams.count == 1 else { return nil }
        return teams.first
    }

    /// The catalog with `changed` applied when only games changed (a score feed's writes, a day's results): the
    /// directory stays, the game index is updated in memory. Nil when anything else changed: build it again.
    public func updating(with changed: [Record]) -> CanonicalCatalog? {
        guard changed.allSatisfy({ $0.recordType == "Game" }) else { return nil }
        var catalog = self
        catalog.games = self.games.updating(with: changed)
        catalog.countedStandings = CountedStandings()
        return catalog
    }

    /// The league id for `mlb`, `MLB` or `league_mlb`; nil when there is no such league.
    public func league(_ text: String) -> String? { self.leagueIDs[text] ?? self.leagueIDs[text.lowercased()] }

    /// The calendar day at a venue at `time` (ms); nil for a venue without a known time zone.
    public func localDate(of time: Int64, at stadium: String) -> CivilDate? {
        guard let zone = self.timeZones[stadium] else { return nil }
        let seconds = time / 1000 + Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(time) / 1000)))
        return CivilDate(daysSince1970: Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400))
    }
}

extension CanonicalCatalog {
    /// How sure a photo-to-game match is: `exact` (at the venue, during the game, the only game there that day),
    /// `likely` (at the venue that day, or near it during the game), `possible` (somewhere near, that day or the next
    /// or previous one).
    public enum MatchConfidence: String, Sendable, Comparable {
        case exact, likely, possible
        var rank: Int { self == .exact ? 0 : self == .likely ? 1 : 2 }
        public static func < (a: Self, b: Self) -> Bool { a.rank < b.rank }
    }

    /// One game a photo may show.
    public struct Match: Sendable {
        public var game: Game
        public var venue: CanonicalDirectory.Nearby
        public var confidence: MatchConfidence
        public var day: PhotoMatchRules.Day
        /// This pair's verdict by the app's rules (`PhotoMatchRules`).
        public var verdict: PhotoMatchRules.Verdict
        /// Minutes from the game's start to the capture time (negative: before the start).
        public var minutesFromStart: Int
    }

    /// How long a game of a sport lasts, for "taken during the game" (start − 90 min … start + this).
    static func duration(ofSport sport: String?) -> Int64 {
        switch sport {
        case "baseball", "american_football": 4 * 3_600_000
        case "soccer": 150 * 60_000
        default: 3 * 3_600_000
        }
    }

    /// The games a photo taken at a place and time may show, best first, and what the app does with it: venues near
    /// the point that were open on that date (`CanonicalDirectory.nearby`), the games at each from the day before the
    /// capture's local day there to the day after, with the venue's and the game's names of that date. `venues` lists
    /// every nearby venue, also those without a game.
    public func match(latitude: Double, longitude: Double, time: Int64, sport: String? = nil, radius: Double = 5000) -> (
        matches: [Match], venues: [CanonicalDirectory.Nearby], verdict: PhotoMatchRules.Verdict
    ) {
        let venues = self.directory.nearby(latitude: latitude, longitude: longitude, radius: radius, sport: sport, on: time)
        var matches: [Match] = []
        for venue in venues {
            guard let day = self.localDate(of: time, at: venue.canonicalId) else { continue }
            let games = self.games.games(on: day.adding(days: -1)...day.adding(days: 1), GameIndex.Filter(venue: venue.canonicalId))
            // A venue of two sports (the Celtics' and the Bruins' arena) lists both's games: the photo's sport keeps its own.
            for game in games where sport == nil || self.sports[game.league] == sport {
                let sinceStart = time - game.startTime
                let during = !game.timeTBD && sinceStart >= -90 * 60_000 && sinceStart <= Self.duration(ofSport: self.sports[game.league])
                // A doubleheader's second game often has no start of its own ("follows game 1"): during either game,
                // neither is exact.
                let doubleheader = games.contains { $0.id != game.id && $0.localDate == game.localDate }
                let sameDay = during || game.localDate == day
                let confidence: MatchConfidence =
                    switch venue.confidence {
                    case .high: during && !doubleheader ? .exact : sameDay ? .likely : .possible
                    case .medium: during ? .likely : .possible
                    case .low: .possible
                    }
                let matchDay: PhotoMatchRules.Day = sameDay ? .same : .adjacent
                matches.append(
                    Match(
                        game: game, venue: venue, confidence: confidence, day: matchDay,
                        verdict: PhotoMatchRules.verdict(distance: venue.confidence, day: matchDay), minutesFromStart: Int(sinceStart / 60_000)))
            }
        }
        func order(_ match: Match) -> (Int, Int, Double, Int64) {
            (match.day == .same ? 0 : 1, match.confidence.rank, match.venue.distanceMeters, abs(Int64(match.minutesFromStart)))
        }
        matches.sort { order($0) < order($1) }
        return (matches, venues, PhotoMatchRules.verdict(of: matches.map { ($0.verdict, $0.day) }))
    }
}

/// A catalog's memo of the standings it counted (`CanonicalCatalog.standings`), shared by the copies of one catalog.
final class CountedStandings: Sendable {
    private let byKey = Mutex<[String: Standings]>([:])

    subscript(key: String) -> Standings? {
        get { self.byKey.withLock { $0[key] } }
        set { self.byKey.withLock { $0[key] = newValue } }
    }
}
