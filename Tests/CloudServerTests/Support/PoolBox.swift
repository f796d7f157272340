import CloudPostgres

/// Lets a client cross into task-group closures in tests.
struct PoolBox: Sendable {
    let client: PostgresPool
}
