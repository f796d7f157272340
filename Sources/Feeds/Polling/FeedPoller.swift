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
    let due = Mutex<[String: [String: Int64]]>([:])
    /// Where each league's pass over the rest of its seasons is (`walkAhead`), by league.
    let ahead = Mutex<[String: CivilDate]>([:])
    /// The backfill's days asked a second time, by `league day`: an answer with games only the next can confirm.
    let backfillAskedAgain = Mutex(Set<String>())
    /// Games an answer should have listed and did not, by id, with that answer's number: retired when a later answer
    /// lacks them too (`retiring`).
    let absent = Mutex<[String: Int]>([:])
    /// How many answers have been read: each answer's number, so a report is confirmed only by a later one.
    let answers = Mutex(0)
    /// Reports that their league's trust policy applies only once a later answer of the same provider repeats them
    /// (docs/FEEDS.md, "Trust by league"): a game moved by days, or one the dataset lacks, in a league that has no
    /// official source. By `league|provider|id`.
    let unconfirmed = Mutex<[String: Unconfirmed]>([:])

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
        /// Games that matched no canonical game and were not added (among `refused`): in a league with no official
        /// source, the provider's next answer may add them.
        public var unmatched = 0
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

    /// True when `league`'s poll of this kind is due at `now`.
    func isDue(_ kind: String, of league: String, now: Int64) -> Bool { self.due.withLock { ($0[league]?[kind] ?? 0) <= now } }

    /// Makes `league`'s poll of this kind due next at `time` (ms).
    func schedule(_ kind: String, of league: String, at time: Int64) { self.due.withLock { $0[league, default: [:]][kind] = time } }

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
            guard self.isDue(poll.kind, of: league, now: now) else { continue }
            self.schedule(poll.kind, of: league, at: now + poll.every.milliseconds)
            // When no provider answered, the poll is tried again soon rather than after its whole interval.
            if await self.poll(league: league, days: poll.days, today: today).provider == nil, poll.every > self.configuration.todayInterval {
                self.schedule(poll.kind, of: league, at: now + self.configuration.todayInterval.milliseconds)
            }
        }
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
            report.unmatched = unmatched.count
            // An unofficial provider's game that matches none is added when the next provider reports it too.
            if !unmatched.isEmpty, provider.trust != .official,
                let (confirmer, confirmerURL) = providers.dropFirst(index + 1).lazy.compactMap({ other in address(of: other).map { (other, $0) } })
                    .first,
                let confirming = await self.ask(confirmer, path: confirmerURL, league: league, yielding: yielding, report: &report)
            {
                let ids = Set(unmatched.map { "\(provider.name) \($0.id):" })
                report.refused.removeAll { refusal in ids.contains { refusal.hasPrefix($0) } }
                report.unmatched = await self.applyToTargets(
                    unmatched, from: provider, days: days, answer: answer, confirming: (confirmer.name, confirming.games), report: &report
                ).count
            }
            for refusal in report.refused + report.skipped {
                self.logger.notice("a provider's game was left as it was", metadata: ["provider": "\(provider.name)", "why": "\(refusal)"])
            }
            Counter(label: "stadiumcloud_feed_games_changed_total", dimensions: [("provider", provider.name)]).increment(
                by: report.changed + report.created)
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
            let disabled = health.failed(
                reason, now: self.clock.now, window: self.configuration.failureWindow, disabledFor: self.configuration.disabledFor)
            self.logger.warning("a score provider failed", metadata: ["provider": "\(provider.name)", "league": "\(league)", "reason": "\(reason)"])
            if disabled {
                self.logger.error(
                    "a score provider is disabled after repeated failures",
                    metadata: ["provider": "\(provider.name)", "for": "\(self.configuration.disabledFor)"])
            }
            await self.recordRun(job: Self.job(provider.name), started: started, outcome: "\(league): failed: \(reason)", succeeded: false)
            return nil
        }
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
