import CloudCore
import CloudRuntime
import Logging
import PostgresNIO

/// The stores on one PostgreSQL client, built the one way the server, every command and the tests build them.
public struct Stores: Sendable {
    public let client: PostgresPool
    public let credentials: CredentialStore
    let clock: ServerClock
    let limits: RecordLimits
    let justInTimeSchema: Bool

    public init(
        client: PostgresPool, clock: ServerClock = .system, passwordHashLog2Rounds: Int = 15, limits: RecordLimits = RecordLimits(),
        justInTimeSchema: Bool = true
    ) {
        self.client = client
        self.clock = clock
        self.limits = limits
        self.justInTimeSchema = justInTimeSchema
        self.credentials = CredentialStore(client: client, hasher: PasswordHasher(log2Rounds: passwordHashLog2Rounds), clock: clock)
    }

    /// The record store. Its token signing key and the database's history live in the database, so the client must be
    /// running.
    public func records(feed: ChangeFeed = ChangeFeed(), logger: Logger) async throws -> RecordStore {
        let key = try await self.credentials.tokenSigningKey(logger: logger)
        try await self.client.confirmHistory(logger: logger)
        return RecordStore(
            client: self.client, signer: TokenSigner(key: key), limits: self.limits, clock: self.clock, feed: feed,
            justInTimeSchema: self.justInTimeSchema)
    }

    public func migrator(_ migrations: [Migration], logger: Logger) -> Migrator {
        Migrator(client: self.client, migrations: migrations, logger: logger)
    }
}
