import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Hummingbird
import Logging

/// The overview: health, traffic of the last hour per endpoint family (with a chart), storage and records.
extension ConsoleController {
    func overview(_ session: ConsoleSession, _ logger: Logger) async throws -> Response {
        let statistics = try await self.dependencies.records.statistics(logger: logger)
        let outage = self.dependencies.records.databaseOutage
        let uptime = (self.configuration.clock.now - self.startedMs) / 1000
        let records = statistics.records.map { row in
            "<tr><td>\(row.scope)</td><td>\(ConsoleFormat.escape(row.recordType))</td><td class=n>\(row.count)</td></tr>"
        }.joined()
        let storage = statistics.topStorage.map { row in
            "<tr><td>\(ConsoleFormat.escape(row.account))</td><td class=n>\(ConsoleFormat.bytes(row.bytes))</td>"
                + "<td class=n>\(row.bytes * 100 / max(1, self.configuration.accountQuotaBytes)) %</td></tr>"
        }.joined()
        return self.html(
            "Overview",
            """
            <h1>Overview</h1>
            <section aria-labelledby=health><h2 id=health>Health</h2><dl>
            <dt>Readiness</dt><dd>\(outage.map { "PostgreSQL does not answer: \(ConsoleFormat.escape($0.reason))" } ?? "ready")</dd>
            <dt>Version</dt><dd>StadiumCloud \(serverVersion)</dd>
            <dt>Uptime</dt><dd>\(uptime / 3600) h \(uptime % 3600 / 60) min</dd>
            <dt>Migrations</dt><dd>\(self.dependencies.migrations.count), all applied (the server does not start otherwise); the newest is \
            \(self.dependencies.migrations.last.map { "\($0.version) \(ConsoleFormat.escape($0.name))" } ?? "none")</dd>
            <dt>Containers</dt><dd>\(self.configuration.containers.sorted().map(ConsoleFormat.escape).joined(separator: ", "))</dd>
            </dl></section>
            \(self.traffic())
            <section aria-labelledby=storage><h2 id=storage>Storage</h2><dl>
            <dt>Database</dt><dd>\(ConsoleFormat.bytes(statistics.databaseBytes))</dd>
            <dt>Assets</dt><dd>\(ConsoleFormat.bytes(statistics.assetBytes)), quota \(ConsoleFormat.bytes(self.configuration.accountQuotaBytes)) per account</dd>
            </dl>
            <table><caption>Top accounts by asset storage</caption>
            <thead><tr><th scope=col>Account</th><th scope=col>Assets</th><th scope=col>Of the quota</th></tr></thead>
            <tbody>\(storage)</tbody></table></section>
            <section aria-labelledby=records><h2 id=records>Records</h2>
            <table><caption>Live records by database and type (private data only as counts)</caption>
            <thead><tr><th scope=col>Database</th><th scope=col>Type</th><th scope=col>Records</th></tr></thead><tbody>\(records)</tbody></table>
            </section>
            """, session: session)
    }

    /// Requests of the last hour in this process: a bar per minute (errors in red) and a row per endpoint family.
    func traffic() -> String {
        let (families, perMinute) = self.statistics.lastHour()
        let rows = families.map { family, tally in
            let errors = Double(tally.clientErrors + tally.serverErrors) * 100 / Double(max(1, tally.requests))
            return """
                <tr><td>\(family)</td><td class=n>\(tally.requests)</td><td class=n>\(String(format: "%.3f", Double(tally.requests) / 3600))</td>\
                <td class=n>\(String(format: "%.1f", errors)) % (\(tally.serverErrors) 5xx)</td>\
                <td class=n>\(String(format: "%.1f", Double(tally.p99Microseconds) / 1000)) ms</td></tr>
                """
        }.joined()
        let busiest = max(1, perMinute.map(\.requests).max() ?? 1)
        let bars = perMinute.enumerated().map { minute, tally -> String in
            let height = Double(tally.requests) * 100 / Double(busiest)
            let failed = Double(tally.clientErrors + tally.serverErrors) * 100 / Double(busiest)
            let x = minute * 10
            return """
                <rect x=\(x) y=\(String(format: "%.1f", 100 - height)) width=8 height=\(String(format: "%.1f", height)) fill="#0645ad"/>\
                <rect x=\(x) y=\(String(format: "%.1f", 100 - failed)) width=8 height=\(String(format: "%.1f", failed)) fill="#a00000"/>
                """
        }.joined()
        let total = perMinute.map(\.requests).reduce(0, +)
        return """
            <section aria-labelledby=traffic><h2 id=traffic>Requests in the last hour (this process)</h2>
            <figure><svg role=img aria-labelledby=chart-title viewBox="0 0 600 115" width=600 height=115 xmlns="http://www.w3.org/2000/svg">
            <title id=chart-title>\(total) requests in the last hour, at most \(busiest) in one minute; errors in red</title>
            <line x1=0 y1=100.5 x2=600 y2=100.5 stroke="#767676"/>\(bars)
            <text x=0 y=113 font-size=10>60 min ago</text><text x=565 y=113 font-size=10>now</text></svg>
            <figcaption>Requests per minute (most: \(busiest)); client and server errors in red</figcaption></figure>
            <table><caption>By endpoint family</caption><thead><tr><th scope=col>Family</th><th scope=col>Requests</th>\
            <th scope=col>Per second</th><th scope=col>Errors</th><th scope=col>p99</th></tr></thead><tbody>\(rows)</tbody></table>
            </section>
            """
    }
}
