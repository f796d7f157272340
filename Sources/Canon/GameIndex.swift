import CloudCore
import SportsDomain

/// The public database's live `Game` records by local day, team, venue and league-season: what games-by-date,
/// the date strip and photo matching read. A value: a new score makes a new index sharing the old one's base;
/// anything else the index is sorted or keyed by builds a new base.
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

    /// What a full build sorts and keys, shared by every index updated from it and never copied.
    private final class Base: Sendable {
        /// Every live game, by start time, and the ids each is known by (its `sourceGameId` and `feedIds`).
        let games: [Game]
        let ids: [[String]]
        let byDate: [CivilDate: [Int]]
        let byTeam: [String: [Int]]
        let byVenue: [String: [Int]]
        let byID: [String: Int]
        /// `league|id` for each game's `sourceGameId` and `league|provider:id` for each id a score feed knows it by
        /// (`feedIds`) → index: how a feed finds a game again after it moved to another day.
        let byFeedKey: [String: Int]
        /// First and last local day of each league-season (`league_mlb|2025`).
        let seasonSpans: [String: ClosedRange<CivilDate>]

        init(entries: some Collection<Entry>) {
            let sorted = entries.sorted { Game.byStart($0.game, $1.game) }
            (self.games, self.ids) = (sorted.map(\.game), sorted.map(\.ids))
            var byDate: [CivilDate: [Int]] = [:]
            var byTeam: [String: [Int]] = [:]
            var byVenue: [String: [Int]] = [:]
            var spans: [String: ClosedRange<CivilDate>] = [:]
            var byID: [String: Int] = [:]
            var byFeedKey: [String: Int] = [:]
            for (index, entry) in sorted.enumerated() {
                let game = entry.game
                byID[game.id] = index
                for id in entry.ids { byFeedKey[game.league + "|" + id] = index }
                byDate[game.localDate, default: []].append(index)
                byTeam[game.homeTeam, default: []].append(index)
                byTeam[game.awayTeam, default: []].append(index)
                byVenue[game.stadium, default: []].append(index)
                let key = game.league + "|" + String(game.season)
                let span = spans[key]
                spans[key] = min(span?.lowerBound ?? game.localDate, game.localDate)...max(span?.upperBound ?? game.localDate, game.localDate)
            }
            (self.byDate, self.byTeam, self.byVenue, self.seasonSpans, self.byID, self.byFeedKey) = (byDate, byTeam, byVenue, spans, byID, byFeedKey)
        }
    }

    private let base: Base
    /// Games whose score or state changed since the base was built, by their place in it: an update copies these (the
    /// games scored since the last new, moved or re-keyed game; a feed's first match of a game adds an id and re-keys),
    /// not the base's ~41,000 games, so a score costs microseconds, not milliseconds.
    private var replaced: [Int: Game] = [:]

    /// Builds the index from `Game` records; deleted and deprecated games (dropped by their source) are left out.
    public init(records: [Record]) {
        self.init(entries: Dictionary(records.compactMap(Self.entry(from:)).map { ($0.game.id, $0) }, uniquingKeysWith: { _, last in last }))
    }

    private init(entries: [String: Entry]) {
        self.base = Base(entries: entries.values)
    }

    /// A game with the ids it is known by: its `sourceGameId` and the `provider:id`s of its `feedIds`.
    struct Entry: Sendable {
        var game: Game
        var ids: [String]
    }

    /// Every live game, by start time.
    public var games: [Game] { self.base.games.indices.map(self.game(at:)) }

    private func game(at index: Int) -> Game { self.replaced[index] ?? self.base.games[index] }

    /// The index with `records` (changed `Game` records, live, deprecated or deleted) applied: what a live game day
    /// costs instead of reading every game again.
    public func updating(with records: [Record]) -> GameIndex {
        let changed = records.filter { $0.recordType == "Game" }
        var updated = self
        for (position, record) in changed.enumerated() {
            // A new score or state changes nothing the index is ordered or keyed by: the game is replaced where it is.
            if let entry = Self.entry(from: record), let index = self.base.byID[record.recordName],
                Self.sameKeys(Entry(game: updated.game(at: index), ids: self.base.ids[index]), entry)
            {
                updated.replaced[index] = entry.game
                continue
            }
            // A new, moved, renamed or dropped game: sorted and keyed again with the rest of the changes.
            var entries = Dictionary(
                uniqueKeysWithValues: self.base.games.indices.map { (self.base.games[$0].id, Entry(game: updated.game(at: $0), ids: self.base.ids[$0])) })
            for record in changed[position...] { entries[record.recordName] = Self.entry(from: record) }
            return GameIndex(entries: entries)
        }
        return updated
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
    public func game(_ id: String) -> Game? { self.base.byID[id].map(self.game(at:)) }

    /// True when the game is known by another id of `provider` than `id`: a doubleheader's other game.
    public func isClaimed(_ gameID: String, by provider: String, otherThan id: String) -> Bool {
        (self.base.byID[gameID].map { self.base.ids[$0] } ?? []).contains { $0.hasPrefix(provider + ":") && $0 != provider + ":" + id }
    }

    /// The live game of `league` a provider knows as `id` (`provider:id` once a feed has matched it, or the
    /// dataset's own source id).
    public func game(league: String, provider: String, id: String) -> Game? {
        (self.base.byFeedKey[league + "|" + provider + ":" + id] ?? self.base.byFeedKey[league + "|" + id]).map(self.game(at:))
    }


    /// Games whose local day is in `days`, by start time.
    public func games(on days: ClosedRange<CivilDate>, _ filter: Filter = Filter()) -> [Game] {
        // Walk the shortest list that must contain every answer: a team's or a venue's games, or the days.
        let lists = [filter.team.map { self.base.byTeam[$0] ?? [] }, filter.venue.map { self.base.byVenue[$0] ?? [] }].compactMap { $0 }
        if let shortest = lists.min(by: { $0.count < $1.count }) {
            return shortest.lazy.map(self.game(at:)).filter { days.contains($0.localDate) && filter.matches($0) }
        }
        var found: [Game] = []
        var day = days.lowerBound
        while day <= days.upperBound {
            for index in self.base.byDate[day] ?? [] {
                let game = self.game(at: index)
                if filter.matches(game) { found.append(game) }
            }
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
    public func span(league: String, season: Int) -> ClosedRange<CivilDate>? { self.base.seasonSpans[league + "|" + String(season)] }
}
