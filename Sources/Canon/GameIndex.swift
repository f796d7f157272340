import CloudCore
import SportsDomain

/// The public database's live `Game` records by local day, team, venue and league-season: what games-by-date,
/// the date strip, photo matching and the feeds read. A value, kept in parts of a league-season's month: a new score
/// makes a new index sharing every part; anything else the index is sorted or keyed by builds that game's part again.
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

    /// The games of one league-season's month (by local day), sorted and keyed: built once, shared by every index
    /// updated from it, never copied. A change that moves, adds, drops or re-keys a game builds its part again (a few
    /// hundred games at most), not its season nor every season.
    private final class Part: Sendable {
        /// The part's live games by start time, and the ids each is known by (its `sourceGameId` and `feedIds`).
        let games: [Game]
        let ids: [[String]]
        let league: String
        let season: Int
        let byDate: [CivilDate: [Int]]
        let byTeam: [String: [Int]]
        let byVenue: [String: [Int]]
        let byID: [String: Int]
        /// Each game's `sourceGameId` and `provider:id` for each id a score feed knows it by (`feedIds`) → index: how a
        /// feed finds a game again after it moved to another day.
        let byFeedKey: [String: Int]
        /// First and last local day.
        let span: ClosedRange<CivilDate>

        init?(entries: some Collection<Entry>) {
            let sorted = entries.sorted { Game.byStart($0.game, $1.game) }
            guard let first = sorted.first else { return nil }
            (self.games, self.ids, self.league, self.season) = (sorted.map(\.game), sorted.map(\.ids), first.game.league, first.game.season)
            var byDate: [CivilDate: [Int]] = [:]
            var byTeam: [String: [Int]] = [:]
            var byVenue: [String: [Int]] = [:]
            var byID: [String: Int] = [:]
            var byFeedKey: [String: Int] = [:]
            var (earliest, latest) = (first.game.localDate, first.game.localDate)
            for (index, entry) in sorted.enumerated() {
                let game = entry.game
                byID[game.id] = index
                for id in entry.ids { byFeedKey[id] = index }
                byDate[game.localDate, default: []].append(index)
                byTeam[game.homeTeam, default: []].append(index)
                byTeam[game.awayTeam, default: []].append(index)
                byVenue[game.stadium, default: []].append(index)
                (earliest, latest) = (min(earliest, game.localDate), max(latest, game.localDate))
            }
            (self.byDate, self.byTeam, self.byVenue, self.byID, self.byFeedKey) = (byDate, byTeam, byVenue, byID, byFeedKey)
            self.span = earliest...latest
        }
    }

    /// The parts by `league|season|month` (`league_mlb|2025|2025-04`).
    private var parts: [String: Part]
    /// Games whose score or state changed since their part was built, by part and place in it: an update copies these
    /// (the part's games scored since its last new, moved or re-keyed game), not the part, so a score costs
    /// microseconds; a keyed change builds one part again, about a millisecond, never the ~41,000 games of all.
    private var replaced: [String: [Int: Game]] = [:]

    /// Builds the index from `Game` records; deleted and deprecated games (dropped by their source) are left out.
    public init(records: [Record]) {
        let entries = Dictionary(records.compactMap(Self.entry(from:)).map { ($0.game.id, $0) }, uniquingKeysWith: { _, last in last })
        self.parts = Dictionary(grouping: entries.values, by: \.part).compactMapValues { Part(entries: $0) }
    }

    /// A game with the ids it is known by: its `sourceGameId` and the `provider:id`s of its `feedIds`.
    struct Entry: Sendable {
        var game: Game
        var ids: [String]
        var part: String {
            let day = self.game.localDate
            return self.game.league + "|" + String(self.game.season) + "|" + String(day.year) + "-" + String(day.month)
        }
    }

    /// Every live game, by start time.
    public var games: [Game] {
        self.parts.flatMap { key, part in part.games.indices.map { self.game(key, part, $0) } }.sorted(by: Game.byStart)
    }

    private func game(_ key: String, _ part: Part, _ index: Int) -> Game { self.replaced[key]?[index] ?? part.games[index] }

    /// Where the game with this id is: its part and its place in it.
    private func place(of id: String) -> (key: String, part: Part, index: Int)? {
        for (key, part) in self.parts { if let index = part.byID[id] { return (key, part, index) } }
        return nil
    }

    /// The index with `records` (changed `Game` records, live, deprecated or deleted) applied: what a live game day
    /// costs instead of reading every game again.
    public func updating(with records: [Record]) -> GameIndex {
        var updated = self
        /// Parts to build again, with their games that changed (nil: no longer live).
        var rebuilt: [String: [String: Entry?]] = [:]
        var rekeyed = Set<String>()
        for record in records where record.recordType == "Game" {
            let entry = Self.entry(from: record)
            let place = self.place(of: record.recordName)
            // A new score or state changes nothing the index is ordered or keyed by: the game is replaced where it is.
            if let entry, let place, !rekeyed.contains(record.recordName), place.key == entry.part,
                Self.sameKeys(Entry(game: updated.game(place.key, place.part, place.index), ids: place.part.ids[place.index]), entry)
            {
                updated.replaced[place.key, default: [:]][place.index] = entry.game
                continue
            }
            // A new, moved, renamed or dropped game: its parts sorted and keyed again with their other changes.
            rekeyed.insert(record.recordName)
            if let place { rebuilt[place.key, default: [:]][record.recordName] = .some(nil) }
            if let entry { rebuilt[entry.part, default: [:]][record.recordName] = entry }
        }
        for (key, changes) in rebuilt {
            var entries: [String: Entry] = [:]
            if let part = self.parts[key] {
                for index in part.games.indices { entries[part.games[index].id] = Entry(game: updated.game(key, part, index), ids: part.ids[index]) }
            }
            for (id, entry) in changes { entries[id] = entry }
            updated.parts[key] = Part(entries: entries.values)
            updated.replaced[key] = nil
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
        let ids =
            (record.fields["sourceGameId"]?.value.stringValue.map { [$0] } ?? [])
            + (record.fields["feedIds"]?.value.arrayValue?.compactMap(\.stringValue) ?? [])
        return Entry(game: game, ids: ids)
    }

    /// The live game with this canonical id.
    public func game(_ id: String) -> Game? { self.place(of: id).map { self.game($0.key, $0.part, $0.index) } }

    /// True when the game is known by another id of `provider` than `id`: a doubleheader's other game.
    public func isClaimed(_ gameID: String, by provider: String, otherThan id: String) -> Bool {
        (self.place(of: gameID).map { $0.part.ids[$0.index] } ?? []).contains { $0.hasPrefix(provider + ":") && $0 != provider + ":" + id }
    }

    /// The live game of `league` a provider knows as `id` (`provider:id` once a feed has matched it, or the
    /// dataset's own source id).
    public func game(league: String, provider: String, id: String) -> Game? {
        for (key, part) in self.parts where part.league == league {
            if let index = part.byFeedKey[provider + ":" + id] { return self.game(key, part, index) }
        }
        for (key, part) in self.parts where part.league == league {
            if let index = part.byFeedKey[id] { return self.game(key, part, index) }
        }
        return nil
    }

    /// Games whose local day is in `days`, by start time.
    public func games(on days: ClosedRange<CivilDate>, _ filter: Filter = Filter()) -> [Game] {
        var found: [Game] = []
        for (key, part) in self.parts
        where part.span.overlaps(days) && (filter.leagues?.contains(part.league) ?? true) && (filter.season.map { $0 == part.season } ?? true) {
            // Walk the shortest list that must contain every answer: a team's or a venue's games, or the days.
            let lists = [filter.team.map { part.byTeam[$0] ?? [] }, filter.venue.map { part.byVenue[$0] ?? [] }].compactMap { $0 }
            if let shortest = lists.min(by: { $0.count < $1.count }) {
                found += shortest.lazy.map { self.game(key, part, $0) }.filter { days.contains($0.localDate) && filter.matches($0) }
                continue
            }
            var day = max(days.lowerBound, part.span.lowerBound)
            while day <= min(days.upperBound, part.span.upperBound) {
                for index in part.byDate[day] ?? [] {
                    let game = self.game(key, part, index)
                    if filter.matches(game) { found.append(game) }
                }
                day = day.adding(days: 1)
            }
        }
        return found.sorted(by: Game.byStart)
    }

    /// The local days in `days` with at least one game, and how many.
    public func dates(in days: ClosedRange<CivilDate>, _ filter: Filter) -> [(date: CivilDate, games: Int)] {
        var counts: [CivilDate: Int] = [:]
        for game in self.games(on: days, filter) { counts[game.localDate, default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The seasons of `league` the index has games of, with their first and last local day.
    public func seasons(of league: String) -> [(season: Int, span: ClosedRange<CivilDate>)] {
        var spans: [Int: ClosedRange<CivilDate>] = [:]
        for part in self.parts.values where part.league == league {
            let span = spans[part.season]
            spans[part.season] =
                min(
                    span?.lowerBound ?? part.span.lowerBound, part.span.lowerBound)...max(
                    span?.upperBound ?? part.span.upperBound, part.span.upperBound)
        }
        return spans.map { (season: $0.key, span: $0.value) }.sorted { $0.season < $1.season }
    }

    /// The first and last local day of a league's season, when the index has games of it.
    public func span(league: String, season: Int) -> ClosedRange<CivilDate>? { self.seasons(of: league).first { $0.season == season }?.span }
}
