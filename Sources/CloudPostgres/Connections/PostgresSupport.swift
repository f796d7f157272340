import CloudCore
import Logging
import PostgresNIO
import _ConnectionPoolModule

/// Transient database failures (connection lost, server restarting or unreachable, deadlock, serialization failure) become
/// TRY_AGAIN_LATER with a retry hint; everything else propagates and is answered as a generic 500 by the edge.
func translatingDatabaseErrors<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
        return try await body()
    } catch let error as PSQLError {
        if error.code == .server {
            let state = error.serverInfo?[.sqlState] ?? ""
            // 40001 serialization, 40P01 deadlock, 57P01-03 shutdown/cannot connect, 53300 too many connections,
            // 25006 a read-only transaction: a standby not yet promoted in a failover.
            guard ["40001", "40P01", "57P01", "57P02", "57P03", "53300", "25006"].contains(state) else { throw error }
        }
        throw CloudError.databaseUnavailable(retryAfter: 2)
    } catch is ConnectionPoolError {
        // The pool gave up connecting for now (its circuit breaker) or was replaced (PostgresPool): transient too.
        throw CloudError.databaseUnavailable(retryAfter: 2)
    }
}

extension CloudError {
    /// TRY_AGAIN_LATER for a database that cannot be reached now, with the seconds a client should wait.
    static func databaseUnavailable(retryAfter: Int) -> CloudError {
        CloudError(.tryAgainLater, "the database is unavailable right now; retry shortly", retryAfter: retryAfter)
    }
}

/// Builds SQL text with numbered bind parameters, for statements whose shape depends on the request
/// (queries with filters). Values are always bound, never spliced into the text.
struct SQLBuilder {
    var sql = ""
    var binds = PostgresBindings()

    /// Binds `value` and returns its placeholder (`$n`).
    mutating func bind(_ value: some PostgresDynamicTypeEncodable) -> String {
        self.binds.append(value)
        return "$\(self.binds.count)"
    }

    mutating func append(_ text: String) { self.sql += text }

    var query: PostgresQuery { PostgresQuery(unsafeSQL: self.sql, binds: self.binds) }
}

extension AsyncSequence {
    /// Every element, in order (a query's decoded rows).
    func all() async throws -> [Element] {
        var elements: [Element] = []
        for try await element in self { elements.append(element) }
        return elements
    }
}
