/// What the score feeds ask, where, and how often (docs/FEEDS.md). Off unless `serve --feeds` turns it on.
public struct FeedConfiguration: Sendable {
    /// The providers, asked in order of trust (official first) for each league they report.
    public var providers: [any ScoreProvider] = [MLBStatsAPI(), NHLWebAPI(), NBALiveScoreboard(), ESPNScoreboard()]
    /// Each provider's base URL (`serve --feed-url name=url` replaces one, e.g. for a replay server).
    public var baseURLs: [String: String] = [
        "espn": "https://site.api.espn.com/apis/site/v2/sports", "mlb-stats": "https://statsapi.mlb.com",
        "nhl-web": "https://api-web.nhle.com", "nba-cdn": "https://cdn.nba.com",
    ]
    /// The public databases the feeds keep current: every listed environment of every container.
    public var targets: [(container: String, environment: String)] = []

    /// A league with a game being played (or about to start) is polled this often.
    public var liveInterval: Duration = .seconds(30)
    /// A league with games still to finish today is polled this often.
    public var todayInterval: Duration = .seconds(300)
    /// The coming `scheduleDays` days of every league are polled this often (new games, moved times, postponements).
    public var scheduleInterval: Duration = .seconds(86_400)
    public var scheduleDays = 7
    /// The last `recentDays` days are re-checked this often for corrections to final scores; older results never.
    public var recentInterval: Duration = .seconds(6 * 3600)
    public var recentDays = 3
    /// Days already played are walked from the first day of each league's seasons that ended less than
    /// `backfillSeasonsWithin` days ago (with none, from the day after its last season), `backfillDays` days an answer,
    /// until yesterday: every result, not only the last `recentDays`' (docs/FEEDS.md, "Results so far").
    public var backfillDays = 7
    public var backfillSeasonsWithin = 180

    /// How long an unofficial provider that kept failing stays disabled, and the window its failures count in.
    public var disabledFor: Duration = .seconds(86_400)
    public var failureWindow: Duration = .seconds(3600)
    /// A provider that has not answered in this long has failed.
    public var requestTimeout: Duration = .seconds(10)
    /// Larger answers are refused (a season's schedule is a few MB).
    public var maxAnswerBytes = 16 << 20

    public init() {}

    /// The providers reporting `league`, most trusted first.
    func providers(for league: String) -> [any ScoreProvider] {
        self.providers.enumerated().filter { $0.element.leagues.contains(league) }
            .sorted { ($0.element.trust, $0.offset) < ($1.element.trust, $1.offset) }.map(\.element)
    }

    /// True when an official provider reports `league`; where none does, a provider's next answer confirms what only
    /// an official source may do (docs/FEEDS.md, "Trust by league").
    func hasOfficialSource(_ league: String) -> Bool { self.providers(for: league).contains { $0.trust == .official } }

    /// Every league some provider reports.
    var leagues: [String] { Array(Set(self.providers.flatMap(\.leagues))).sorted() }
}
