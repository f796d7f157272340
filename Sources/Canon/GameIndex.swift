import CloudCore
import SportsDomain

/// The public database's live `Game` records by local day, team, venue and league-season: what games-by-date,
/// the date strip and photo matching read. Pure and immutable; rebuilt when the public database changes.
public struct GameIndex: Sendable {
    /// Which games a question is about; nil means any.
    public struct Filter: Sendable {
        public var leagues: Set<String>?
        public var team: String?
        public var venue: String?
        public var season: Int?

        public init(leagues: Set<String>? = nil, team: String? = nil, venue: String? = nil, season: Int? = nil) {
            (self.leagues, self.team, self.venue, self.season) = (leagues, team, venue, season)
        }

        func matches(_ game: Game) -> Bool {
            (self.leagues?.contains(game.league) ?? true) && (self.team.map { game.homeTeam == $0 || game.awayTeam == $0 } ?? true)
                && (self.venue.map { game.stadium == $0 } ?? true) && (self.season.map { game.season == $0 } ?? true)
        }
    }

    /// Every live game, by start time.
    public private(set) var games: [Game]
    private let byDate: [CivilDate: [Int]]
    private let byTeam: [String: [Int]]
    private let byVenue: [String: [Int]]
    private let byID: [String: Int]
    /// `league|id` for each game's `sourceGameId` and `league|provider:id` for each id a score feed knows it by
    /// (`feedIds`) → index: how a feed finds a game again after it moved to another day.
    private let byFeedKey: [String: Int]
    /// First and last local day of each league-season (`league_mlb|2025`).
    private let seasonSpans: [String: ClosedRange<CivilDate>]

    /// Builds the index from `Game` records; deleted and deprecated games (dropped by their source) are left out.
    public init(records: [Record]) {
        self.init(entries: Dictionary(records.compactMap(Self.entry(from:)).map { ($0.game.id, $0) }, uniquingKeysWith: { _, last in last }))
    }

    /// A game with the ids it is known by: its `sourceGameId` and the `provider:id`s of its `feedIds`.
    struct Entry: Sendable {
        var game: Game
        var ids: [String]
    }

    /// Every live game by id, to update the index without reading the records again.
    private var entries: [String: Entry]

    private init(entries: [String: Entry]) {
        self.entries = entries
        self.games = entries.values.map(\.game).sorted(by: Game.byStart)
        var byDate: [CivilDate: [Int]] = [:]
        var byTeam: [String: [Int]] = [:]
        var byVenue: [String: [Int]] = [:]
        var spans: [String: ClosedRange<CivilDate>] = [:]
        var byID: [String: Int] = [:]
        var byFeedKey: [String: Int] = [:]
        for (index, game) in self.games.enumerated() {
            byID[game.id] = index
            for id in entries[game.id]?.ids ?? [] { byFeedKey[game.league + "|" + id] = index }
            byDate[game.localDate, default: []].append(index)
            byTeam[game.homeTeam, default: []].append(index)
            byTeam[game.awayTeam, default: []].append(index)
            byVenue[game.stadium, default: []].append(index)
            let key = game.league + "|" + String(game.season)
            let span = spans[key]
            spans[key] = min(span?.lowerBound ?? game.localDate, game.localDate)...max(span?.upperBound ?? game.localDate, game.localDate)
        }
        (self.byDate, self.byTeam, self.byVenue, self.seasonSpans, self.byID) = (byDate, byTeam, byVenue, spans, byID)
        self.byFeedKey = byFeedKey
    }

    /// The index with `records` (changed `Game` records, live, deprecated or deleted) applied: what a live game day
    /// costs instead of reading every game again.
    public func updating(with records: [Record]) -> GameIndex {
        var updated = self
        var reindex = false
        for record in records where record.recordType == "Game" {
            let entry = Self.entry(from: record)
            // A new score or state changes nothing the index is ordered or keyed by: the game is replaced where it is.
            // Sorting and keying every game again cost about 0.7 s of CPU per score in a release build.
            if let entry, let old = self.entries[record.recordName], let index = self.byID[record.recordName], Self.sameKeys(old, entry) {
                updated.games[index] = entry.game
            } else {
                reindex = true
            }
            updated.entries[record.recordName] = entry
        }
        return reindex ? GameIndex(entries: updated.entries) : updated
    }

    /// True when two versions of a game sort and are found the same way (start, day, teams, venue, season, ids).
    static func sameKeys(_ a: Entry, _ b: Entry) -> Bool {
        let (x, y) = (a.game, b.game)
        return (x.startTime, x.localDate, x.homeTeam, x.awayTeam, x.stadium) == (y.startTime, y.localDate, y.homeTeam, y.awayTeam, y.stadium)
            && (x.league, x.season) == (y.league, y.season) && a.ids == b.ids
    }

    static func entry(from record: Record) -> Entry? {
        guard record.recordType == "Game", !record.deleted, let game = Game(recordName: record.recordName, fields: record.fields) else { return nil }
        let ids = (record.fields["sourceGameId"]?.value.stringValue.map { [$0] } ?? [])
            + (record.fields["feedIds"]?.value.arrayValue?.compactMap(\.stringValue) ?? [])
        return Entry(game: game, ids: ids)
    }

    /// The live game with this canonical id.
    public func game(_ id: String) -> Game? { self.byID[id].map { self.games[$0] } }

    /// True when the game is known by another id of `provider` than `id`: a doubleheader's other game.
    public func isClaimed(_ gameID: String, by provider: String, otherThan id: String) -> Bool {
        (self.entries[gameID]?.ids ?? []).contains { $0.hasPrefix(provider + ":") && $0 != provider + ":" + id }
    }

    /// The live game of `league` a provider knows as `id` (`provider:id` once a feed has matched it, or the
    /// dataset's own source id).
    public func game(league: String, provider: String, id: String) -> Game? {
        (self.byFeedKey[league + "|" + provider + ":" + id] ?? self.byFeedKey[league + "|" + id]).map { self.games[$0] }
    }


    /// Games whose local day is in `days`, by start time.
    public func games(on days: ClosedRange<CivilDate>, _ filter: Filter = Filter()) -> [Game] {
        // Walk the shortest list that must contain every answer: a team's or a venue's games, or the days.
        let lists = [filter.team.map { self.byTeam[$0] ?? [] }, filter.venue.map { self.byVenue[$0] ?? [] }].compactMap { $0 }
        if let shortest = lists.min(by: { $0.count < $1.count }) {
            return shortest.lazy.map { self.games[$0] }.filter { days.contains($0.localDate) && filter.matches($0) }
        }
        var found: [Game] = []
        var day = days.lowerBound
        while day <= days.upperBound {
            for index in self.byDate[day] ?? [] where filter.matches(self.games[index]) { found.append(self.games[index]) }
            day = day.adding(days: 1)
        }
        return found
    }

    /// The local days in `days` with at least one game, and how many.
    public func dates(in days: ClosedRange<CivilDate>, _ filter: Filter) -> [(date: CivilDate, games: Int)] {
        var counts: [CivilDate: Int] = [:]
        for game in self.games(on: days, filter) { counts[game.localDate, default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The first and last local day of a league's season, when the index has games of it.
    public func span(league: String, season: Int) -> ClosedRange<CivilDate>? { self.seasonSpans[league + "|" + String(season)] }
}
