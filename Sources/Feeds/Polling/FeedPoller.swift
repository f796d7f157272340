import AsyncHTTPClient
import Canon
import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import SportsDomain
import Synchronization

/// Keeps the canonical games current from the leagues' feeds (docs/FEEDS.md): asks the most trusted provider of a
/// league that is enabled, falls back to the next when it fails, matches each reported game to its canonical game and
/// writes what changed into the season's zone, so `changes/wait` followers wake. One process of a cluster polls at a
/// time; each league is polled on its own, so a provider that hangs holds only the leagues it is being asked for, and
/// only until its answer's deadline.
public final class FeedPoller: Service, Sendable {
    let records: RecordStore
    let canonical: CanonicalEndpoints
    let configuration: FeedConfiguration
    let clock: ServerClock
    let http: HTTPClient
    let logger: Logger
    let health: [String: ProviderHealth]
    /// When each kind of poll of each league is due next (ms), by league.
    private let due = Mutex<[String: [String: Int64]]>([:])
    /// Where each league's pass over the rest of its seasons is (`walkAhead`), by league.
    private let ahead = Mutex<[String: CivilDate]>([:])
    /// The backfill's days asked a second time, by `league day`: an answer with games only the next can confirm.
    private let backfillAskedAgain = Mutex(Set<String>())
    /// Games an answer should have listed and did not, by id, with that answer's number: retired when a later answer
    /// lacks them too (`retiring`).
    private let absent = Mutex<[String: Int]>([:])
    /// How many answers have been read: each answer's number, so a report is confirmed only by a later one.
    private let answers = Mutex(0)
    /// Reports that their league's trust policy applies only once a later answer of the same provider repeats them
    /// (docs/FEEDS.md, "Trust by league"): a game moved by days, or one the dataset lacks, in a league that has no
    /// official source. By `league|provider|id`.
    private let unconfirmed = Mutex<[String: Unconfirmed]>([:])

    struct Unconfirmed {
        var startTime: Int64
        var teams: (home: String, away: String)?
        /// The answer that first reported it, and when (ms): reports older than two days are forgotten.
        var answer: Int
        var seenAt: Int64
    }

    public init(
        records: RecordStore, canonical: CanonicalEndpoints, configuration: FeedConfiguration, clock: ServerClock, http: HTTPClient = .shared,
        logger: Logger
    ) {
        (self.records, self.canonical, self.configuration, self.clock, self.http) = (records, canonical, configuration, clock, http)
        self.logger = logger
        self.health = Dictionary(uniqueKeysWithValues: configuration.providers.map { ($0.name, ProviderHealth($0)) })
    }

    /// What one poll of a league did.
    public struct Report: Sendable, Equatable {
        /// The provider that answered; nil when none did.
        public var provider: String?
        public var reported = 0, changed = 0, created = 0
        /// Games left as they were, with why (unknown team, impossible score, a disagreement…).
        public var refused: [String] = []
        public var skipped: [String] = []
        /// Providers that failed before one answered.
        public var failures: [String] = []
    }

    /// Polls while this process holds the cluster's feed lock; the others try for it every minute. The lock is given
    /// up every `lease` so a process that stopped polling (but not dying) does not hold the feeds for ever.
    public func run() async throws {
        while !Task.isCancelled {
            do {
                _ = try await self.records.exclusively("feeds", logger: self.logger) {
                    await self.loadHealth()
                    let until = self.clock.now + Self.lease.milliseconds
                    await withTaskGroup(of: Void.self) { group in
                        for league in self.configuration.leagues {
                            group.addTask { await self.keepPolling(league, walks: false, until: until) }
                            group.addTask { await self.keepPolling(league, walks: true, until: until) }
                        }
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                self.logger.error("the feeds' lock could not be taken", metadata: ["error": "\(error)"])
            }
            try await self.clock.sleep(for: .seconds(60))
        }
    }

    static let lease = Duration.seconds(3600)

    /// Why a game that matches none is left out.
    static let unconfirmedGame =
        "matches no canonical game; only an official source, two sources agreeing, or (in a league with no official source) the provider's next answer add games"

    /// The polls that walk a season's days (`backfill`, `walkAhead`). They run apart from a league's live, today,
    /// schedule and recent polls, and wait for their provider to be idle, so a season's walk never delays tonight's
    /// scores.
    static let walks: Set<String> = ["backfill", "ahead"]

    /// Runs `league`'s polls (or its walks) whenever one is due, until `until` (ms).
    func keepPolling(_ league: String, walks: Bool, until: Int64) async {
        while !Task.isCancelled, self.clock.now < until {
            if walks { await self.runWalks(league: league) } else { await self.runPolls(league: league) }
            let now = self.clock.now
            let next = self.due.withLock { $0[league]?.filter { Self.walks.contains($0.key) == walks }.values.min() } ?? now + 60_000
            do { try await self.clock.sleep(for: .milliseconds(min(max(next - now, 1000), 60_000))) } catch { return }
        }
    }

    /// Every league's polls due now, the leagues side by side.
    public func runDue() async {
        await withTaskGroup(of: Void.self) { group in
            for league in self.configuration.leagues { group.addTask { await self.runDue(league: league) } }
        }
    }

    /// The polls and walks of `league` due now, one after the other.
    public func runDue(league: String) async {
        await self.runPolls(league: league)
        await self.runWalks(league: league)
    }

    /// The games the polls look at: the first target database's catalog.
    func catalog(for league: String) async -> CanonicalCatalog? {
        guard let target = self.configuration.targets.first else { return nil }
        do {
            let database = try await self.records.database(
                container: target.container, environment: target.environment, scope: .public, owner: nil, logger: self.logger)
            return try await self.canonical.catalog(for: database, logger: self.logger)
        } catch {
            self.logger.error("the feeds could not read the games", metadata: ["league": "\(league)", "error": "\(error)"])
            return nil
        }
    }

    /// The walks of `league` due now: the backfill, and the rest of its seasons.
    func runWalks(league: String) async {
        guard let catalog = await self.catalog(for: league) else { return }
        await self.backfill(league: league, catalog: catalog, now: self.clock.now)
        await self.walkAhead(league: league, catalog: catalog, now: self.clock.now)
    }

    /// The polls of `league` due now: every `liveInterval` while it plays, every `todayInterval` while games are left
    /// today, the coming days' schedule daily, the last days' results for corrections every `recentInterval`.
    func runPolls(league: String) async {
        let now = self.clock.now
        let today = Self.usDay(of: now)
        guard let catalog = await self.catalog(for: league) else { return }
        let games = catalog.games.games(on: today.adding(days: -1)...today, GameIndex.Filter(leagues: [league]))
        let playing = games.filter { game in
            let status = Game.Status(rawValue: game.status) ?? .scheduled
            return [.live, .delayed, .suspended].contains(status)
                || (status == .scheduled && now >= game.startTime - 10 * 60_000 && now <= game.startTime + 6 * 3_600_000)
        }
        let unfinished = games.filter { Self.usDay(of: $0.startTime) == today && ($0.status == "scheduled" || $0.status == "delayed") }
        var polls: [(kind: String, days: ClosedRange<CivilDate>, every: Duration)] = [
            ("schedule", today...today.adding(days: self.configuration.scheduleDays - 1), self.configuration.scheduleInterval),
            ("recent", today.adding(days: -self.configuration.recentDays)...today.adding(days: -1), self.configuration.recentInterval),
        ]
        // One poll per day with a game being played: a provider that knows only today (the NBA's CDN) still
        // answers for today's, and a game past midnight is asked for on its own day.
        let playingDays = Set(playing.map { Self.usDay(of: $0.startTime) }).sorted()
        for day in playingDays { polls.append(("live \(day)", day...day, self.configuration.liveInterval)) }
        if playingDays.isEmpty, !unfinished.isEmpty {
            polls.append(("today", today...today, self.configuration.todayInterval))
        }
        for poll in polls {
            guard self.due.withLock({ ($0[league]?[poll.kind] ?? 0) <= now }) else { continue }
            self.due.withLock { $0[league, default: [:]][poll.kind] = now + poll.every.milliseconds }
            // When no provider answered, the poll is tried again soon rather than after its whole interval.
            if await self.poll(league: league, days: poll.days, today: today).provider == nil, poll.every > self.configuration.todayInterval {
                self.due.withLock { $0[league, default: [:]][poll.kind] = now + self.configuration.todayInterval.milliseconds }
            }
        }
    }

    /// Walks the rest of the league's seasons being played or published (the current one and the next), from the day
    /// after the schedule poll's week to the last day of the last, a week an answer (at once again while days are
    /// left), one pass a day: games added, moved (a start time published later, a day changed), retired and moved to
    /// another venue over the whole season, not only the coming week. Where a pass is stays in memory: a restart
    /// starts the day's pass again.
    func walkAhead(league: String, catalog: CanonicalCatalog, now: Int64) async {
        let today = Self.usDay(of: now)
        guard self.due.withLock({ ($0[league]?["ahead"] ?? 0) <= now }) else { return }
        let start = today.adding(days: self.configuration.scheduleDays)
        guard let last = catalog.games.seasons(of: league).map(\.span.upperBound).filter({ $0 >= start }).max() else {
            self.due.withLock { $0[league, default: [:]]["ahead"] = Self.startOfUSDay(today.adding(days: 1)) }
            return
        }
        let first = max(self.ahead.withLock { $0[league] } ?? start, start)
        let days = first...min(first.adding(days: self.configuration.backfillDays - 1), last)
        guard await self.poll(league: league, days: days, today: today, yielding: true).provider != nil else {
            self.due.withLock { $0[league, default: [:]]["ahead"] = now + self.configuration.todayInterval.milliseconds }
            return
        }
        let next = days.upperBound.adding(days: 1)
        self.ahead.withLock { $0[league] = next <= last ? next : nil }
        self.due.withLock { $0[league, default: [:]]["ahead"] = next <= last ? now : Self.startOfUSDay(today.adding(days: 1)) }
    }

    /// Walks the days already played, from the first day of the league's recent seasons to yesterday, one answer of
    /// `backfillDays` days each time it is due (at once again while days are left, at the next day once at yesterday),
    /// so every game played gets its result; the live, today and recent polls look 3 days back at most. Where it is
    /// is kept in PostgreSQL (`job_states`, job `backfill <league>`): a restart or a takeover goes on from there. Each
    /// answer is recorded as the job's run (the console's jobs page).
    func backfill(league: String, catalog: CanonicalCatalog, now: Int64) async {
        let today = Self.usDay(of: now)
        guard self.due.withLock({ ($0[league]?["backfill"] ?? 0) <= now }) else { return }
        let job = "backfill " + league
        let saved: CivilDate?
        do {
            saved = try await self.records.jobStates(logger: self.logger)[job].flatMap { try? JSONValue.parse(Array($0.utf8))["next"]?.stringValue }
                .flatMap(CivilDate.init)
        } catch {
            self.logger.error("the feeds' backfill could not read where it was", metadata: ["league": "\(league)", "error": "\(error)"])
            self.due.withLock { $0[league, default: [:]]["backfill"] = now + self.configuration.todayInterval.milliseconds }
            return
        }
        guard let first = saved ?? Self.firstDayToWalk(catalog.games.seasons(of: league).map(\.span), today: today, within: self.configuration),
            first < today
        else {
            self.due.withLock { $0[league, default: [:]]["backfill"] = Self.startOfUSDay(today.adding(days: 1)) }
            return
        }
        let days = first...min(first.adding(days: self.configuration.backfillDays - 1), today.adding(days: -1))
        let started = self.clock.now
        let report = await self.poll(league: league, days: days, today: today, yielding: true)
        guard report.provider != nil else {
            self.due.withLock { $0[league, default: [:]]["backfill"] = now + self.configuration.todayInterval.milliseconds }
            return
        }
        // Games the dataset lacks, in a league whose provider's next answer must confirm them: asked once more at once.
        let unconfirmed = report.refused.contains { $0.contains(Self.unconfirmedGame) }
        if unconfirmed, self.backfillAskedAgain.withLock({ $0.insert(league + " " + days.lowerBound.description).inserted }) {
            self.due.withLock { $0[league, default: [:]]["backfill"] = now }
            return
        }
        let next = days.upperBound.adding(days: 1)
        do {
            try await self.records.saveJobState(job, JSONWriter.encode(["next": .string(next.description)]), at: self.clock.now, logger: self.logger)
        } catch {
            self.logger.error("the feeds' backfill could not save where it is", metadata: ["league": "\(league)", "error": "\(error)"])
        }
        self.due.withLock { $0[league, default: [:]]["backfill"] = next < today ? now : Self.startOfUSDay(today.adding(days: 1)) }
        let outcome = "\(days.lowerBound)…\(days.upperBound) from \(report.provider ?? ""): \(report.reported) games, \(report.changed) changed, "
            + "\(report.created) added; " + (next < today ? "next \(next)" : "caught up to yesterday")
        await self.recordRun(job: job, started: started, outcome: outcome, succeeded: true)
    }

    /// Where a league's walk starts: the first day of its seasons that ended less than `backfillSeasonsWithin` days
    /// ago; with none, the day after its last season's last day (the seasons the dataset lacks come from the feeds),
    /// at most `backfillSeasonsWithin` × 3 days back.
    static func firstDayToWalk(_ seasons: [ClosedRange<CivilDate>], today: CivilDate, within configuration: FeedConfiguration) -> CivilDate? {
        let recent = seasons.filter { $0.upperBound >= today.adding(days: -configuration.backfillSeasonsWithin) && $0.lowerBound < today }
        if let first = recent.map(\.lowerBound).min() { return first }
        guard let last = seasons.map(\.upperBound).filter({ $0 < today }).max(),
            last >= today.adding(days: -3 * configuration.backfillSeasonsWithin)
        else { return nil }
        return last.adding(days: 1)
    }

    /// The first moment (ms) of a US Eastern day.
    static func startOfUSDay(_ day: CivilDate) -> Int64 {
        let utcMidnight = Int64(day.daysSince1970) * 86_400_000
        let noon = Date(timeIntervalSince1970: Double(utcMidnight) / 1000 + 43_200)
        return utcMidnight - Int64(Self.eastern.secondsFromGMT(for: noon)) * 1000
    }

    /// Asks the providers of `league` for `days`, most trusted first, until one answers, and applies its games to
    /// every target database.
    @discardableResult
    /// - Parameter yielding: a walk's poll: each provider is asked once it is idle, after the polls waiting for it.
    public func poll(league: String, days: ClosedRange<CivilDate>, today: CivilDate, yielding: Bool = false) async -> Report {
        let providers = self.configuration.providers(for: league).map(\.name)
        let before = providers.map { self.health[$0]?.durable }
        let report = await self.askInTurn(league: league, days: days, today: today, yielding: yielding)
        // A failure counted, a provider disabled or enabled again: kept for the next process that polls.
        await self.saveHealth(of: zip(providers, before).filter { self.health[$0.0]?.durable != $0.1 }.map(\.0))
        return report
    }

    func askInTurn(league: String, days: ClosedRange<CivilDate>, today: CivilDate, yielding: Bool) async -> Report {
        var report = Report()
        let providers = self.configuration.providers(for: league)
        /// Where to ask a provider, when it is enabled and can answer for these days.
        func address(of provider: any ScoreProvider) -> String? {
            guard self.health[provider.name]?.isEnabled(now: self.clock.now) == true, let base = self.configuration.baseURLs[provider.name] else {
                return nil
            }
            return provider.path(league: league, days: days, today: today).map { base + $0 }
        }
        for (index, provider) in providers.enumerated() {
            guard let url = address(of: provider), let health = self.health[provider.name] else { continue }
            let started = self.clock.now
            guard let parsed = await self.ask(provider, path: url, league: league, yielding: yielding, report: &report) else { continue }
            report.provider = provider.name
            report.reported = parsed.games.count
            report.skipped = parsed.skipped
            let answer = self.answers.withLock { count in
                count += 1
                return count
            }
            let unmatched = await self.applyToTargets(parsed.games, from: provider, days: days, answer: answer, confirming: nil, report: &report)
            // An unofficial provider's game that matches none is added when the next provider reports it too.
            if !unmatched.isEmpty, provider.trust != .official,
                let (confirmer, confirmerURL) = providers.dropFirst(index + 1).lazy.compactMap({ other in address(of: other).map { (other, $0) } }).first,
                let confirming = await self.ask(confirmer, path: confirmerURL, league: league, yielding: yielding, report: &report)
            {
                let ids = Set(unmatched.map { "\(provider.name) \($0.id):" })
                report.refused.removeAll { refusal in ids.contains { refusal.hasPrefix($0) } }
                _ = await self.applyToTargets(
                    unmatched, from: provider, days: days, answer: answer, confirming: (confirmer.name, confirming.games), report: &report)
            }
            for refusal in report.refused + report.skipped {
                self.logger.notice("a provider's game was left as it was", metadata: ["provider": "\(provider.name)", "why": "\(refusal)"])
            }
            Counter(label: "stadiumcloud_feed_games_changed_total", dimensions: [("provider", provider.name)]).increment(by: report.changed + report.created)
            Counter(label: "stadiumcloud_feed_games_refused_total", dimensions: [("provider", provider.name)])
                .increment(by: report.refused.count + report.skipped.count)
            let outcome =
                "\(league) \(days.lowerBound)…\(days.upperBound): \(report.reported) games, \(report.changed) changed, \(report.created) added, "
                + "\(report.refused.count + report.skipped.count) refused"
            health.succeeded(outcome)
            await self.recordRun(job: Self.job(provider.name), started: started, outcome: outcome, succeeded: true)
            return report
        }
        return report
    }

    /// One provider's answer, read; nil (the failure counted, logged and recorded) when it has none.
    func ask(_ provider: any ScoreProvider, path url: String, league: String, yielding: Bool, report: inout Report) async -> (
        games: [ProviderGame], skipped: [String]
    )? {
        guard let health = self.health[provider.name] else { return nil }
        var started = self.clock.now
        do {
            // A walk lets every poll already waiting for the provider go first.
            while yielding, let free = health.nextFreeSlot(after: started) {
                try await self.clock.sleep(for: .milliseconds(free - started))
                started = self.clock.now
            }
            let slot = health.reserveSlot(now: started)
            if slot > started { try await self.clock.sleep(for: .milliseconds(slot - started)) }
            return try provider.parse(try await self.fetch(url), league: league)
        } catch {
            // A poller stopping (the server shutting down, the lease given up) is not the provider failing: counted, it
            // would disable a provider that did nothing wrong, and its rest is kept in PostgreSQL.
            if Task.isCancelled { return nil }
            let reason = (error as? ProviderAnswerError)?.description ?? String(describing: error)
            report.failures.append("\(provider.name): \(reason)")
            let disabled = health.failed(reason, now: self.clock.now, window: self.configuration.failureWindow, disabledFor: self.configuration.disabledFor)
            self.logger.warning("a score provider failed", metadata: ["provider": "\(provider.name)", "league": "\(league)", "reason": "\(reason)"])
            if disabled {
                self.logger.error(
                    "a score provider is disabled after repeated failures", metadata: ["provider": "\(provider.name)", "for": "\(self.configuration.disabledFor)"])
            }
            await self.recordRun(job: Self.job(provider.name), started: started, outcome: "\(league): failed: \(reason)", succeeded: false)
            return nil
        }
    }

    /// Applies `games` to every target database; returns those that matched no canonical game in the first.
    func applyToTargets(
        _ games: [ProviderGame], from provider: any ScoreProvider, days: ClosedRange<CivilDate>, answer: Int,
        confirming: (provider: String, games: [ProviderGame])?, report: inout Report
    ) async -> [ProviderGame] {
        var unmatched: [ProviderGame]?
        for target in self.configuration.targets {
            do {
                let applied = try await self.apply(
                    games, from: provider, days: days, answer: answer, confirming: confirming, container: target.container,
                    environment: target.environment)
                (report.changed, report.created) = (report.changed + applied.changed, report.created + applied.created)
                report.refused += applied.refused
                if unmatched == nil {
                    unmatched = applied.unmatched
                    await self.hold(applied.held, releasing: applied.added)
                }
            } catch {
                report.refused.append("\(target.environment): not written: \(error)")
                self.logger.error("a feed's games could not be written", metadata: ["provider": "\(provider.name)", "error": "\(error)"])
            }
        }
        return unmatched ?? []
    }

    /// What applying one answer to one public database did.
    struct Applied {
        var changed = 0, created = 0
        var refused: [String] = []
        /// Games that matched no canonical game and were not added.
        var unmatched: [ProviderGame] = []
        /// New games at a venue the directory lacks, described for an operator, by `heldKey`; and the keys of new games
        /// added (no longer held).
        var held: [String: String] = [:]
        var added = Set<String>()
    }

    /// - Parameters:
    ///   - days: the days asked: the games the answer should list (`retiring`).
    ///   - answer: the answer's number: in a league with no official source, a game moved by days or one the dataset
    ///     lacks is applied when an earlier answer of the provider reported it too (`unconfirmed`).
    ///   - confirming: another provider's games: a game of `games` that matches no canonical game is added when one of
    ///     them names the same teams within 12 hours (two sources agree), as an official source's is.
    func apply(
        _ games: [ProviderGame], from provider: any ScoreProvider, days: ClosedRange<CivilDate>, answer: Int,
        confirming: (provider: String, games: [ProviderGame])? = nil, container: String, environment: String
    ) async throws -> Applied {
        let database = try await self.records.database(container: container, environment: environment, scope: .public, owner: nil, logger: self.logger)
        let catalog = try await self.canonical.catalog(for: database, logger: self.logger)
        let matcher = GameMatcher(catalog: catalog)
        let now = self.clock.now
        var applied = Applied()
        var updates: [String: [String: (ProviderGame, CivilDate, GameUpdate.Venue?)]] = [:]
        var creates: [String: [RecordDraft]] = [:]
        var taken = Set<String>()
        /// Games whose move by days their provider's earlier answer confirmed.
        var confirmedMoves = Set<String>()
        /// True when the report is the provider's second word on it, in a league where that must stand in for an official
        /// source; otherwise notes it for the next answer.
        func repeated(_ reported: ProviderGame, teams: (home: String, away: String)?) -> Bool {
            guard provider.trust != .official, !self.configuration.hasOfficialSource(reported.league) else { return false }
            let key = reported.league + "|" + provider.name + "|" + reported.id
            return self.unconfirmed.withLock { unconfirmed in
                if let earlier = unconfirmed[key], earlier.answer < answer, abs(earlier.startTime - reported.startTime) <= (teams == nil ? 0 : 12 * 3_600_000),
                    earlier.teams?.home == teams?.home, earlier.teams?.away == teams?.away
                {
                    return true
                }
                if unconfirmed[key]?.answer != answer {
                    unconfirmed = unconfirmed.filter { $0.value.seenAt > now - 2 * 86_400_000 }
                    unconfirmed[key] = Unconfirmed(startTime: reported.startTime, teams: teams, answer: answer, seenAt: now)
                }
                return false
            }
        }
        for reported in games {
            let abbreviation = String(reported.league.dropFirst("league_".count))
            switch matcher.match(reported, taken: taken) {
            case .unreadable(let why):
                applied.refused.append("\(provider.name) \(reported.id): \(why)")
            case .game(let game, _):
                taken.insert(game.id)
                // An official source that names another of the directory's venues moves the game there.
                var venue: GameUpdate.Venue?
                if provider.trust == .official, case .named(let named)? = matcher.venue(of: reported, home: game.homeTeam), named.id != game.stadium {
                    venue = named
                }
                let day = catalog.localDate(of: reported.startTime, at: venue?.id ?? game.stadium) ?? game.localDate
                if day != game.localDate, repeated(reported, teams: nil) { confirmedMoves.insert(game.id) }
                updates[CanonicalDataset.gameZone("\(abbreviation)_\(game.season)"), default: [:]][game.id] = (reported, day, venue)
            case .none(let home, let away):
                let confirmed = confirming?.games.contains { other in
                    abs(other.startTime - reported.startTime) <= 12 * 3_600_000
                        && matcher.team(other.home, league: reported.league, at: other.startTime) == home
                        && matcher.team(other.away, league: reported.league, at: other.startTime) == away
                }
                guard provider.trust == .official || confirmed == true || repeated(reported, teams: (home, away)) else {
                    applied.unmatched.append(reported)
                    applied.refused.append("\(provider.name) \(reported.id): \(Self.unconfirmedGame)")
                    continue
                }
                if let confirming { self.logger.notice("two providers agree on a game the dataset lacks", metadata: ["providers": "\(provider.name), \(confirming.provider)", "game": "\(reported.id)"]) }
                let venue: GameUpdate.Venue
                switch matcher.venue(of: reported, home: home) {
                case .named(let named)?, .home(let named)?: venue = named
                case .unknown(let name)?:
                    // Not guessed: an operator adds the venue (or the name as an alias), and the next answer adds the game.
                    applied.held[Self.heldKey(reported)] =
                        "\(reported.league) \(reported.provider) \(reported.id): \(reported.away.names.first ?? "?") at \(reported.home.names.first ?? "?"), "
                        + "on \(Self.usDay(of: reported.startTime)), at \"\(name)\", a venue the directory lacks"
                    applied.refused.append("\(provider.name) \(reported.id): at \"\(name)\", a venue the directory lacks: held for an operator")
                    continue
                case nil:
                    applied.refused.append("\(provider.name) \(reported.id): a new game without a venue")
                    continue
                }
                applied.added.insert(Self.heldKey(reported))
                guard let day = catalog.localDate(of: reported.startTime, at: venue.id),
                    let new = GameUpdate.newGame(
                        reported, league: (reported.league, abbreviation), home: home, away: away, venue: venue, localDate: day,
                        sport: catalog.sports[reported.league], now: now)
                else {
                    applied.refused.append("\(provider.name) \(reported.id): a new game without a season")
                    continue
                }
                creates[new.zone, default: []].append(new.draft)
            }
        }
        let retired = self.retiring(catalog.games, listed: taken, in: games, from: provider, days: days, answer: answer, applied: &applied)
        let zones = Set(updates.keys).union(creates.keys).union(retired.keys).sorted()
        guard !zones.isEmpty else { return applied }
        let names = updates.values.flatMap(\.keys) + creates.values.flatMap { $0.map(\.recordName) } + retired.values.flatMap { $0 }
        let trustByName = Dictionary(self.configuration.providers.map { ($0.name, $0.trust) }, uniquingKeysWith: { a, _ in a })
        let (zoneUpdates, zoneCreates, movesConfirmed) = (updates, creates, confirmedMoves)
        let outcome = Mutex(Applied())
        let stamp = ChangeStamp(timestamp: now, userRecordName: "_canonicalImport", deviceID: "feed " + provider.name)
        try await self.records.rewriteZones(zones, in: database, only: names, stamp: stamp, logger: self.logger) { stored in
            var result = Applied()
            var drafts: [String: [RecordDraft]] = [:]
            for zone in zones {
                for (id, (reported, day, venue)) in (zoneUpdates[zone] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    guard let record = stored[zone]?[id], !record.deleted else { continue }
                    switch GameUpdate.apply(
                        reported, trust: provider.trust, to: record, localDate: day, sport: catalog.sports[reported.league], now: now,
                        movesDays: movesConfirmed.contains(id), venue: venue, trustOf: { trustByName[$0] })
                    {
                    case .changed(let fields, _):
                        drafts[zone, default: []].append(RecordDraft(recordName: id, recordType: "Game", fields: fields))
                        result.changed += 1
                    case .unchanged: break
                    case .refused(let why): result.refused.append("\(provider.name) \(reported.id) (\(id)): \(why)")
                    }
                }
                for id in retired[zone] ?? [] {
                    guard let record = stored[zone]?[id], !record.deleted,
                        case .changed(let fields, _) = GameUpdate.retire(record, provider: provider.name, now: now)
                    else { continue }
                    drafts[zone, default: []].append(RecordDraft(recordName: id, recordType: "Game", fields: fields))
                    result.changed += 1
                }
                // A game another process added meanwhile is not added twice.
                for draft in zoneCreates[zone] ?? [] where stored[zone]?[draft.recordName] == nil {
                    drafts[zone, default: []].append(draft)
                    result.created += 1
                }
            }
            outcome.withLock { $0 = result }
            return drafts
        }
        let written = outcome.withLock { $0 }
        applied.changed = written.changed
        applied.created = written.created
        applied.refused += written.refused
        return applied
    }

    /// The games an answer should have listed and did not, twice in a row, by zone: dropped from the schedule, or
    /// if-necessary games not needed (docs/FEEDS.md, "Games dropped from the schedule"). Only an answer its league
    /// trusts for that (an official source's, or where there is none the provider's), only games not yet played or
    /// under way, only the days inside those asked (a provider's day and a venue's can differ by one at the edges),
    /// and only when the answer lists games and lacks few (more is the provider's error, not the schedule's).
    func retiring(
        _ index: GameIndex, listed: Set<String>, in games: [ProviderGame], from provider: any ScoreProvider, days: ClosedRange<CivilDate>, answer: Int,
        applied: inout Applied
    ) -> [String: [String]] {
        self.absent.withLock { absent in for id in listed { absent[id] = nil } }
        guard days.upperBound >= days.lowerBound.adding(days: 2), let league = games.first?.league,
            provider.trust == .official || !self.configuration.hasOfficialSource(league)
        else { return [:] }
        let inside = days.lowerBound.adding(days: 1)...days.upperBound.adding(days: -1)
        let expected = index.games(on: inside, GameIndex.Filter(leagues: [league])).filter { game in
            [Game.Status.scheduled, .postponed, .delayed].contains(Game.Status(rawValue: game.status) ?? .scheduled)
        }
        let missing = expected.filter { !listed.contains($0.id) }
        guard missing.count <= max(2, expected.count / 10) else {
            applied.refused.append("\(provider.name): lacks \(missing.count) of the \(expected.count) games of \(inside.lowerBound)…\(inside.upperBound); none retired")
            return [:]
        }
        var retired: [String: [String]] = [:]
        let abbreviation = String(league.dropFirst("league_".count))
        self.absent.withLock { absent in
            for game in missing {
                if let first = absent[game.id], first < answer {
                    retired[CanonicalDataset.gameZone("\(abbreviation)_\(game.season)"), default: []].append(game.id)
                } else if absent[game.id] == nil {
                    absent[game.id] = answer
                }
            }
        }
        return retired
    }

    /// The answer's bytes; throws on a transport error, a status other than 200, an answer too large, or one not
    /// whole within `requestTimeout` of the poller's clock (headers and body: a provider dripping its answer fails too).
    func fetch(_ url: String) async throws -> [UInt8] {
        let timeout = self.configuration.requestTimeout
        return try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask { try await self.download(url) }
            group.addTask {
                try await self.clock.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let answer = try await group.next() ?? nil else { throw ProviderAnswerError("no whole answer within \(timeout)") }
            return answer
        }
    }

    func download(_ url: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "StadiumCloud feeds")
        let response = try await self.http.execute(request, timeout: .milliseconds(self.configuration.requestTimeout.milliseconds))
        let body = try await response.body.collect(upTo: self.configuration.maxAnswerBytes)
        // (The body is read either way: an unread one would keep its connection from the client's pool.)
        guard response.status == .ok else { throw ProviderAnswerError("HTTP \(response.status.code)") }
        return Array(body.readableBytesView)
    }

    /// A reported game's key among the held games.
    static func heldKey(_ reported: ProviderGame) -> String { reported.league + "|" + reported.provider + "|" + reported.id }

    static let heldGamesJob = "held games"

    /// Keeps the new games held for an operator (a venue the directory lacks) in PostgreSQL, those added since let go
    /// and those not reported for 14 days forgotten; the list is the job `held games`'s last run on the console's jobs
    /// page.
    func hold(_ held: [String: String], releasing added: Set<String>) async {
        guard !held.isEmpty || !added.isEmpty else { return }
        let now = self.clock.now
        do {
            let saved = try await self.records.jobStates(logger: self.logger)[Self.heldGamesJob].flatMap { try? JSONValue.parse(Array($0.utf8)) }
            var games = saved?.objectValue ?? [:]
            for key in added { games[key] = nil }
            games = games.filter { ($0.value["seenAt"]?.int64Value ?? 0) > now - 14 * 86_400_000 }
            for (key, description) in held { games[key] = ["description": .string(description), "seenAt": .int(now)] }
            guard JSONValue.object(games) != saved ?? .object([:]) else { return }
            try await self.records.saveJobState(Self.heldGamesJob, JSONWriter.encode(.object(games)), at: now, logger: self.logger)
            let list = games.values.compactMap { $0["description"]?.stringValue }.sorted()
            let outcome = list.isEmpty ? "none held" : "\(list.count) held for an operator: " + list.joined(separator: "; ")
            await self.recordRun(job: Self.heldGamesJob, started: now, outcome: outcome, succeeded: list.isEmpty)
        } catch {
            self.logger.error("the games held for an operator could not be kept", metadata: ["error": "\(error)"])
        }
    }

    /// Takes up each provider's failures and rest as the last process that polled left them.
    public func loadHealth() async {
        do {
            let saved = try await self.records.jobStates(logger: self.logger)
            for (name, health) in self.health {
                if let state = saved[Self.job(name)], let durable = ProviderHealth.Durable(json: state) { health.restore(durable) }
            }
        } catch {
            self.logger.error("the score providers' health could not be read", metadata: ["error": "\(error)"])
        }
    }

    func saveHealth(of providers: [String]) async {
        for name in providers {
            guard let durable = self.health[name]?.durable else { continue }
            do {
                try await self.records.saveJobState(Self.job(name), durable.json, at: self.clock.now, logger: self.logger)
            } catch {
                self.logger.error("a score provider's health could not be saved", metadata: ["provider": "\(name)", "error": "\(error)"])
            }
        }
    }

    /// The job a provider's polls are recorded as (console, jobs page) and its health kept under.
    static func job(_ provider: String) -> String { "feed " + provider }

    func recordRun(job: String, started: Int64, outcome: String, succeeded: Bool) async {
        do {
            try await self.records.recordJobRun(
                JobRun(job: job, startedMs: started, endedMs: self.clock.now, outcome: outcome, succeeded: succeeded), logger: self.logger)
        } catch {
            self.logger.error("a feed's run could not be recorded", metadata: ["job": "\(job)", "error": "\(error)"])
        }
    }

    /// Each provider's state, for the console and tests: enabled, requests made, last outcome.
    public var providerStates: [(name: String, enabled: Bool, requests: Int, lastOutcome: String)] {
        let now = self.clock.now
        return self.configuration.providers.compactMap { provider in
            guard let health = self.health[provider.name] else { return nil }
            let state = health.snapshot
            return (provider.name, state.disabledUntil.map { $0 > now } != true, state.requests, state.lastOutcome)
        }
    }

    /// The US Eastern calendar day at `time` (ms): the day North American leagues and their providers list games by.
    static func usDay(of time: Int64) -> CivilDate {
        let seconds = time / 1000 + Int64(Self.eastern.secondsFromGMT(for: Date(timeIntervalSince1970: Double(time) / 1000)))
        return CivilDate(daysSince1970: Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400))
    }

    static let eastern = TimeZone(identifier: "America/New_York")!
}

