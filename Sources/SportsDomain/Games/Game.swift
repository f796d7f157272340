import CloudCore

/// A canonical game, read from its `Game` record: the one reader of that record type, used by the server's game
/// index and by devices reading the seasons they follow.
public struct Game: Sendable, Equatable {
    public var id, league: String
    /// The season's start year (`2025` for NBA 2025-26) and its label.
    public var season: Int
    public var seasonLabel, gameType, status: String
    /// Milliseconds since 1970 (UTC); `timeTBD` when the source has no real start time yet.
    public var startTime: Int64
    public var timeTBD, neutralSite: Bool
    /// The calendar day at the venue.
    public var localDate: CivilDate
    /// Canonical ids.
    public var homeTeam, awayTeam, stadium: String
    public var homeScore, awayScore: Int?
    /// The live state a score feed keeps (docs/FEEDS.md): the period (inning, quarter, half…), the clock as the league
    /// shows it ("4:28"), the provider's words for the moment ("Top 7th", "Final/OT"), and when the feed last changed
    /// the game (ms). Nil until a feed reports the game.
    public var period: Int?
    public var clock, statusDetail: String?
    public var updatedAt: Int64?
    /// Where to watch or hear it (`ESPN`, `TNT`, `SN`), as a score feed lists them; nil when no provider gave any.
    public var broadcasts: [String]?

    public init(
        id: String, league: String, season: Int, seasonLabel: String, gameType: String, status: String, startTime: Int64, timeTBD: Bool,
        neutralSite: Bool, localDate: CivilDate, homeTeam: String, awayTeam: String, stadium: String, homeScore: Int?, awayScore: Int?
    ) {
        (self.id, self.league, self.season, self.seasonLabel, self.gameType, self.status) = (id, league, season, seasonLabel, gameType, status)
        (self.startTime, self.timeTBD, self.neutralSite, self.localDate) = (startTime, timeTBD, neutralSite, localDate)
        (self.homeTeam, self.awayTeam, self.stadium, self.homeScore, self.awayScore) = (homeTeam, awayTeam, stadium, homeScore, awayScore)
    }

    /// What a game's `status` may be: the dataset's scheduled, final, postponed and cancelled, and what feeds add
    /// while it is played.
    public enum Status: String, Sendable, CaseIterable {
        case scheduled, live, delayed, suspended, final, postponed, cancelled

        /// Where a scoreboard shows it: games being played (or held up) first, then those still to come, then those
        /// that are over or will not be played today.
        public var scoreboardRank: Int {
            switch self {
            case .live, .delayed, .suspended: 0
            case .scheduled: 1
            case .final: 2
            case .postponed, .cancelled: 3
            }
        }
    }

    /// The fields of a `Game` record a score feed keeps once it has reported the game (its `liveUpdatedAt` is set):
    /// a dataset import that carries older values leaves them as the feed wrote them.
    public static let feedFields: Set<String> = [
        "status", "homeScore", "awayScore", "period", "clock", "statusDetail", "liveUpdatedAt", "liveSource", "startTime", "localDate", "timeTBD",
        "feedIds", "broadcasts",
    ]
    /// The field of a `Game` record listing the fields an operator corrected by hand: no feed or import changes them.
    public static let pinnedFieldsField = "pinnedFields"

    /// The scoreboard's order (live, upcoming by start time, final, then postponed and cancelled), then start time.
    public static func scoreboardOrder(_ a: Game, _ b: Game) -> Bool {
        func rank(_ game: Game) -> Int { Status(rawValue: game.status)?.scoreboardRank ?? 1 }
        return (rank(a), a.startTime, a.id) < (rank(b), b.startTime, b.id)
    }

    /// The game a live `Game` record describes; nil for a deprecated one (dropped by its source) or one missing a
    /// required field.
    public init?(recordName: String, fields: [String: FieldValue]) {
        func string(_ name: String) -> String? { fields[name]?.value.stringValue }
        func int(_ name: String) -> Int? { fields[name]?.value.int64Value.map { Int($0) } }
        func reference(_ name: String) -> String? { fields[name]?.value["recordName"]?.stringValue }
        guard fields["deprecatedAt"] == nil, let league = reference("league"), let season = int("season"),
            let start = fields["startTime"]?.value.int64Value, let day = string("localDate").flatMap({ CivilDate($0) }),
            let home = reference("homeTeam"), let away = reference("awayTeam"), let stadium = reference("stadium")
        else { return nil }
        self.init(
            id: recordName, league: league, season: season, seasonLabel: string("seasonLabel") ?? String(season),
            gameType: string("gameType") ?? "regular", status: string("status") ?? "scheduled", startTime: start, timeTBD: int("timeTBD") == 1,
            neutralSite: int("neutralSite") == 1, localDate: day, homeTeam: home, awayTeam: away, stadium: stadium,
            homeScore: int("homeScore"), awayScore: int("awayScore"))
        (self.period, self.clock, self.statusDetail) = (int("period"), string("clock"), string("statusDetail"))
        self.updatedAt = fields["liveUpdatedAt"]?.value.int64Value
        self.broadcasts = fields["broadcasts"]?.value.arrayValue?.compactMap(\.stringValue)
    }

    /// By start time, then id: the order every list of games is in.
    public static func byStart(_ a: Game, _ b: Game) -> Bool { (a.startTime, a.id) < (b.startTime, b.id) }
}
