import CloudHTTP
import CloudPostgres
import Logging

/// The one composition root of the executable: `serve` and every command build their live parts here, from the
/// command line's database options and the server configuration (its clock, password cost and limits).
struct Live {
    let configuration: ServerConfiguration
    let client: PostgresPool
    let stores: Stores
    let logger: Logger

    init(_ options: DatabaseOptions, configuration: ServerConfiguration = ServerConfiguration()) throws {
        self.configuration = configuration
        self.logger = options.logger
        self.client = PostgresPool(try options.url(), logger: self.logger)
        self.stores = Stores(
            client: self.client, clock: configuration.clock, passwordHashLog2Rounds: configuration.auth.passwordHashLog2Rounds,
            limits: configuration.limits, justInTimeSchema: configuration.justInTimeSchema)
    }

    /// Runs a command's work while the client runs, then shuts the client down (`serve` runs the client in its
    /// `ServiceGroup` instead).
    func run<Result: Sendable>(_ body: (Live, Logger) async throws -> Result) async throws -> Result {
        try await self.client.whileRunning { _ in try await body(self, self.logger) }
    }
}
