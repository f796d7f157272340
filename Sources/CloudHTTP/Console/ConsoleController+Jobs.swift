import CloudCore
import CloudPostgres
import CloudRuntime
import Hummingbird
import Logging

/// Background jobs: what each did on its last run (whichever process ran it), how often they run, and the
/// tombstone purge horizon devices' change tokens must stay within.
extension ConsoleController {
    func jobsPage(_ session: ConsoleSession, _ logger: Logger) async throws -> Response {
        let runs = try await self.dependencies.records.jobRuns(logger: logger)
        let configuration = self.configuration
        let every: [String: String] = [
            "tombstone-purge": "every \(configuration.purgeInterval.milliseconds / 60_000) min",
            "asset-collector": "every \(configuration.assetCollectionInterval.milliseconds / 60_000) min",
        ]
        let rows = runs.map { run in
            """
            <tr><th scope=row>\(ConsoleFormat.escape(run.job))</th><td>\(every[run.job] ?? Self.feedJobCadence(run.job))</td><td>\(ConsoleFormat.dateTime(run.startedMs))</td>\
            <td class=n>\(run.endedMs - run.startedMs) ms</td><td\(run.succeeded ? "" : " class=error")>\(ConsoleFormat.escape(run.outcome))</td></tr>
            """
        }.joined()
        let horizon = configuration.clock.now - configuration.tombstoneRetention.milliseconds
        return self.html(
            "Jobs",
            """
            <h1>Background jobs</h1>
            <dl><dt>Tombstone purge horizon</dt><dd>\(ConsoleFormat.dateTime(horizon)): deletions older than \
            \(configuration.tombstoneRetention.milliseconds / 86_400_000) days are purged; a device whose change token is older gets \
            CHANGE_TOKEN_EXPIRED and fetches its zone again</dd>
            <dt>Asset collector</dt><dd>removes asset bytes no record references after \(configuration.unreferencedAssetGraceSeconds / 3600) h, \
            and partial uploads abandoned for a day</dd></dl>
            <table><caption>Last run of each job (one process of a cluster runs each round)</caption>
            <thead><tr><th scope=col>Job</th><th scope=col>Runs</th><th scope=col>Last started</th><th scope=col>Took</th><th scope=col>Outcome</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            \(runs.isEmpty ? "<p>No job has run yet: the first runs an interval after the server starts.</p>" : "")
            """, session: session)
    }

    /// How often a feed's job runs (docs/FEEDS.md): the jobs are named by the feeds, which this layer does not know.
    static func feedJobCadence(_ job: String) -> String {
        if job.hasPrefix("feed ") { return "by game state" }
        if job.hasPrefix("backfill ") { return "a week of past days an answer, then daily" }
        return job == "held games" ? "when a game is held or let go" : ""
    }
}
