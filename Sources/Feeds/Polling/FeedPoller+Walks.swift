import Canon
import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Logging
import SportsDomain
import Synchronization

/// A league's walks over its seasons' days (docs/FEEDS.md, "Results so far: the backfill", "Whole seasons: the walk
/// ahead"): apart from its other polls, a provider asked only once it is idle.
extension FeedPoller {
    /// The polls that walk a season's days (`backfill`, `walkAhead`). They run apart from a league's live, today,
    /// schedule and recent polls, and wait for their provider to be idle, so a season's walk never delays tonight's
    /// scores.
    static let walks: Set<String> = ["backfill", "ahead"]

    /// The walks of `league` due now: the backfill, and the rest of its seasons.
    func runWalks(league: String) async {
        guard let catalog = await self.catalog(for: league) else { return }
        await self.backfill(league: league, catalog: catalog, now: self.clock.now)
        await self.walkAhead(league: league, catalog: catalog, now: self.clock.now)
    }

    /// Walks the rest of the league's seasons being played or published (the current one and the next), from the day
    /// after the schedule poll's week to the last day of the last, a week an answer (at once again while days are
    /// left), one pass a day: games added, moved (a start time published later, a day changed), retired and moved to
    /// another venue over the whole season, not only the coming week. Where a pass is stays in memory: a restart
    /// starts the day's pass again.
    func walkAhead(league: String, catalog: CanonicalCatalog, now: Int64) async {
        let today = Self.usDay(of: now)
        guard self.isDue("ahead", of: league, now: now) else { return }
        let start = today.adding(days: self.configuration.scheduleDays)
        guard let last = catalog.games.seasons(of: league).map(\.span.upperBound).filter({ $0 >= start }).max() else {
            self.schedule("ahead", of: league, at: Self.startOfUSDay(today.adding(days: 1)))
            return
        }
        let first = max(self.ahead.withLock { $0[league] } ?? start, start)
        let days = first...min(first.adding(days: self.configuration.backfillDays - 1), last)
        guard await self.poll(league: league, days: days, today: today, yielding: true).provider != nil else {
            self.schedule("ahead", of: league, at: now + self.configuration.todayInterval.milliseconds)
            return
        }
        let next = days.upperBound.adding(days: 1)
        self.ahead.withLock { $0[league] = next <= last ? next : nil }
        self.schedule("ahead", of: league, at: next <= last ? now : Self.startOfUSDay(today.adding(days: 1)))
    }

    /// Walks the days already played, from the first day of the league's recent seasons to yesterday, one answer of
    /// `backfillDays` days each time it is due (at once again while days are left, at the next day once at yesterday),
    /// so every game played gets its result; the live, today and recent polls look 3 days back at most. Where it is
    /// is kept in PostgreSQL (`job_states`, job `backfill <league>`): a restart or a takeover goes on from there. Each
    /// answer is recorded as the job's run (the console's jobs page).
    func backfill(league: String, catalog: CanonicalCatalog, now: Int64) async {
        let today = Self.usDay(of: now)
        guard self.isDue("backfill", of: league, now: now) else { return }
        let job = "backfill " + league
        let saved: CivilDate?
        do {
            saved = try await self.records.jobStates(logger: self.logger)[job].flatMap { try? JSONValue.parse(Array($0.utf8))["next"]?.stringValue }
                .flatMap(CivilDate.init)
        } catch {
            self.logger.error("the feeds' backfill could not read where it was", metadata: ["league": "\(league)", "error": "\(error)"])
            self.schedule("backfill", of: league, at: now + self.configuration.todayInterval.milliseconds)
            return
        }
        guard let first = saved ?? Self.firstDayToWalk(catalog.games.seasons(of: league).map(\.span), today: today, within: self.configuration),
            first < today
        else {
            self.schedule("backfill", of: league, at: Self.startOfUSDay(today.adding(days: 1)))
            return
        }
        let days = first...min(first.adding(days: self.configuration.backfillDays - 1), today.adding(days: -1))
        let started = self.clock.now
        let report = await self.poll(league: league, days: days, today: today, yielding: true)
        guard report.provider != nil else {
            self.schedule("backfill", of: league, at: now + self.configuration.todayInterval.milliseconds)
            return
        }
        // Games the dataset lacks, in a league whose provider's next answer must confirm them: asked once more at once.
        if report.unmatched > 0, self.backfillAskedAgain.withLock({ $0.insert(league + " " + days.lowerBound.description).inserted }) {
            self.schedule("backfill", of: league, at: now)
            return
        }
        let next = days.upperBound.adding(days: 1)
        do {
            try await self.records.saveJobState(job, JSONWriter.encode(["next": .string(next.description)]), at: self.clock.now, logger: self.logger)
        } catch {
            self.logger.error("the feeds' backfill could not save where it is", metadata: ["league": "\(league)", "error": "\(error)"])
        }
        self.schedule("backfill", of: league, at: next < today ? now : Self.startOfUSDay(today.adding(days: 1)))
        let outcome =
            "\(days.lowerBound)…\(days.upperBound) from \(report.provider ?? ""): \(report.reported) games, \(report.changed) changed, "
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
}
