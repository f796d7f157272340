import Canon
import CloudCore
import SportsDomain

/// How far a provider's word goes (docs/FEEDS.md): an official source wins over an unofficial one, and only an
/// official one may add a game the dataset lacks. Official providers are retried and never disabled; unofficial ones
/// are disabled for a day after 3 failures in an hour, scraped ones after 2.
public enum ProviderTrust: Int, Sendable, Comparable {
    case official = 0
    case unofficial = 1
    case scraped = 2

    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    /// Failures within an hour that disable the provider for a day; nil: never disabled.
    public var failuresBeforeDisabling: Int? {
        switch self {
        case .official: nil
        case .unofficial: 3
        case .scraped: 2
        }
    }
}

/// A game as one provider reports it, before it is matched to a canonical game.
public struct ProviderGame: Sendable, Equatable {
    /// One side of the game: every name the provider gives the team (full name, city and nickname, code), most
    /// specific first, and its score when the game has one.
    public struct Side: Sendable, Equatable {
        public var names: [String]
        public var score: Int?

        public init(names: [String], score: Int?) {
            self.names = names.filter { !$0.isEmpty }
            self.score = score
        }
    }

    public var provider: String
    /// The canonical league id (`league_mlb`).
    public var league: String
    /// The provider's own id of the game.
    public var id: String
    /// The season's start year when the provider says it (`2026` for NHL 2026-27).
    public var season: Int?
    /// `regular`, `playoff`… when the provider says it.
    public var gameType: String?
    public var startTime: Int64
    public var timeTBD: Bool
    public var status: Game.Status
    public var period: Int?
    public var clock: String?
    public var detail: String?
    public var home, away: Side
    public var venue: String?
    /// 1 or 2 in a doubleheader.
    public var gameNumber: Int?
    /// The networks and services showing it, in the provider's order; nil when the provider lists none.
    public var broadcasts: [String]?

    public init(
        provider: String, league: String, id: String, season: Int? = nil, gameType: String? = nil, startTime: Int64, timeTBD: Bool = false,
        status: Game.Status, period: Int? = nil, clock: String? = nil, detail: String? = nil, home: Side, away: Side, venue: String? = nil,
        gameNumber: Int? = nil, broadcasts: [String]? = nil
    ) {
        (self.provider, self.league, self.id, self.season, self.gameType) = (provider, league, id, season, gameType)
        (self.startTime, self.timeTBD, self.status, self.period, self.clock, self.detail) = (startTime, timeTBD, status, period, clock, detail)
        (self.home, self.away, self.venue, self.gameNumber) = (home, away, venue, gameNumber)
        // Once each, and none is no list: a provider that names none leaves the stored list as it is.
        var seen = Set<String>()
        let listed = (broadcasts ?? []).filter { !$0.isEmpty && seen.insert($0).inserted }
        self.broadcasts = listed.isEmpty ? nil : listed
    }
}

/// A provider's answer that cannot be read at all (the whole batch is dropped and counted as a failure).
public struct ProviderAnswerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One source of schedules and scores: where to ask and how to read the answer. Pure; the poller does the asking.
public protocol ScoreProvider: Sendable {
    /// Short name used in logs, metrics and `--feed-url` (`espn`, `mlb-stats`).
    var name: String { get }
    var trust: ProviderTrust { get }
    /// Requests per second the provider is asked at most.
    var requestsPerSecond: Double { get }
    /// The canonical leagues it reports.
    var leagues: [String] { get }
    /// Where the games of `league` on the US calendar days `days` are (relative to the provider's base URL); nil when
    /// the provider cannot answer for those days (the NBA's live scoreboard knows only today).
    func path(league: String, days: ClosedRange<CivilDate>, today: CivilDate) -> String?
    /// The games in an answer. Throws `ProviderAnswerError` when the answer is not the provider's shape at all; a
    /// single game it cannot read is left out (and counted by `skipped`).
    func parse(_ body: [UInt8], league: String) throws -> (games: [ProviderGame], skipped: [String])
}

/// Reading provider answers.
enum ProviderJSON {
    /// The JSON of an answer, without the UTF-8 byte order mark some providers send.
    static func parse(_ body: [UInt8]) throws -> JSONValue {
        let bytes = body.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(body.dropFirst(3)) : body
        do { return try JSONValue.parse(bytes) } catch { throw ProviderAnswerError("the answer is not JSON") }
    }

    /// `2026-10-05T00:20Z`, `2026-10-05T00:20:00Z` or with fractional seconds, as ms since 1970.
    static func time(_ text: String?) -> Int64? {
        guard var text else { return nil }
        if text.hasSuffix("Z"), text.count == 17 { text.insert(contentsOf: ":00", at: text.index(text.endIndex, offsetBy: -1)) }
        if let dot = text.firstIndex(of: "."), text.hasSuffix("Z") { text = String(text[..<dot]) + "Z" }
        return GameTime.milliseconds(text)
    }

    /// A score written as a number or as text ("22").
    static func score(_ value: JSONValue?) -> Int? {
        if let number = value?.int64Value { return Int(number) }
        return value?.stringValue.flatMap { Int($0) }
    }
}
