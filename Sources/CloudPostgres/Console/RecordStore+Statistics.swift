import CloudCore
import Logging
import PostgresNIO

/// What the operator console's overview shows: sizes and counts, never the contents of a person's records.
public struct ServerStatistics: Sendable {
    public var databaseBytes: Int64 = 0
    /// Live records by database scope and record type.
    public var records: [(scope: String, recordType: String, count: Int64)] = []
    public var assetBytes: Int64 = 0
    /// The accounts storing the most asset bytes, most first.
    public var topStorage: [(account: String, bytes: Int64)] = []
}

extension RecordStore {
    /// The overview's figures, read in one connection.
    public func statistics(logger: Logger) async throws -> ServerStatistics {
        try await self.client.reading { connection in
            var statistics = ServerStatistics()
            for try await size in try await connection.query("SELECT pg_database_size(current_database())", logger: logger).decode(Int64.self) {
                statistics.databaseBytes = size
            }
            for try await row in try await connection.query(
                """
                SELECT d.scope, r.record_type, count(*) FROM records r JOIN zones z ON z.id = r.zone_id JOIN databases d ON d.id = z.database_id
                WHERE NOT r.deleted GROUP BY 1, 2 ORDER BY 1, 2
                """, logger: logger
            ).decode((String, String, Int64).self) { statistics.records.append(row) }
            for try await bytes in try await connection.query("SELECT coalesce(sum(size), 0)::int8 FROM assets", logger: logger).decode(Int64.self) {
                statistics.assetBytes = bytes
            }
            for try await row in try await connection.query(
                """
                SELECT a.name, sum(s.size)::int8 FROM assets s JOIN databases d ON d.id = s.database_id JOIN accounts a ON a.id = d.owner_account_id
                GROUP BY a.name ORDER BY 2 DESC, 1 LIMIT 10
                """, logger: logger
            ).decode((String, Int64).self) { statistics.topStorage.append(row) }
            return statistics
        }
    }
}

/// The last run of a background job, as the console's jobs page shows it.
public struct JobRun: Sendable, Equatable {
    public var job: String
    public var startedMs: Int64
    public var endedMs: Int64
    /// The run's figures, or why it failed.
    public var outcome: String
    public var succeeded: Bool

    public init(job: String, startedMs: Int64, endedMs: Int64, outcome: String, succeeded: Bool) {
        self.job = job
        self.startedMs = startedMs
        self.endedMs = endedMs
        self.outcome = outcome
        self.succeeded = succeeded
    }
}

extension RecordStore {
    /// Keeps `run` as its job's last run (whichever process ran it).
    public func recordJobRun(_ run: JobRun, logger: Logger) async throws {
        _ = try await self.client.transaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO job_runs (job, started_ms, ended_ms, outcome, succeeded)
                VALUES (\(run.job), \(run.startedMs), \(run.endedMs), \(run.outcome), \(run.succeeded))
                ON CONFLICT (job) DO UPDATE SET started_ms = excluded.started_ms, ended_ms = excluded.ended_ms, outcome = excluded.outcome,
                succeeded = excluded.succeeded
                """, logger: logger)
        }
    }

    /// The last run of each job, by job.
    public func jobRuns(logger: Logger) async throws -> [JobRun] {
        try await self.client.reading { connection in
            try await connection.query("SELECT job, started_ms, ended_ms, outcome, succeeded FROM job_runs ORDER BY job", logger: logger).decode(
                (String, Int64, Int64, String, Bool).self
            ).all().map { JobRun(job: $0.0, startedMs: $0.1, endedMs: $0.2, outcome: $0.3, succeeded: $0.4) }
        }
    }

    /// Each job's saved state (its own JSON), by job.
    public func jobStates(logger: Logger) async throws -> [String: String] {
        try await self.client.reading { connection in
            Dictionary(
                uniqueKeysWithValues: try await connection.query("SELECT job, state FROM job_states", logger: logger).decode((String, String).self)
                    .all())
        }
    }

    public func saveJobState(_ job: String, _ state: String, at now: Int64, logger: Logger) async throws {
        _ = try await self.client.transaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO job_states (job, state, updated_ms) VALUES (\(job), \(state), \(now))
                ON CONFLICT (job) DO UPDATE SET state = excluded.state, updated_ms = excluded.updated_ms
                """, logger: logger)
        }
    }
}
