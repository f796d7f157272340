import Foundation
import Logging
import PostgresNIO

/// A `postgres://user:password@host:port/database` URL turned into a PostgresNIO client configuration.
public struct DatabaseURL: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String

    public init(_ text: String) throws {
        guard let components = URLComponents(string: text), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else { throw ConfigurationError("database URL must look like postgres://user:password@host:5432/database") }
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.percentEncodedUser.flatMap { $0.removingPercentEncoding } ?? "postgres"
        self.password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        let path = components.path.drop(while: { $0 == "/" })
        self.database = path.isEmpty ? self.username : String(path)
    }

    /// The same server with another database (tests clone one database per suite).
    public func with(database: String) -> DatabaseURL {
        var copy = self
        copy.database = database
        return copy
    }

    /// The URL with the password masked, safe for logs.
    public var description: String { "postgres://\(self.username)\(self.password == nil ? "" : ":***")@\(self.host):\(self.port)/\(self.database)" }

    /// One connection of its own (the pool's probe, the change listener).
    public var connectionConfiguration: PostgresConnection.Configuration {
        PostgresConnection.Configuration(
            host: self.host, port: self.port, username: self.username, password: self.password, database: self.database, tls: .disable)
    }

    public func clientConfiguration(maximumConnections: Int = 20, connectTimeout: Duration = .seconds(5)) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: self.host, port: self.port, username: self.username, password: self.password,
            database: self.database, tls: .disable)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = connectTimeout
        return configuration
    }
}

/// A configuration mistake, reported to the operator as it is.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `body` with a running connection pool for `url`, and stops the pool afterwards. `checkInterval` is how often,
/// and how patiently, the pool checks that PostgreSQL answers (`PostgresPool`).
@discardableResult
public func withDatabasePool<Result: Sendable>(
    _ url: DatabaseURL, maximumConnections: Int = 20, checkInterval: Duration = .seconds(1), logger: Logger,
    isolation: isolated (any Actor)? = #isolation, _ body: (PostgresPool) async throws -> Result
) async throws -> Result {
    try await PostgresPool(url, maximumConnections: maximumConnections, logger: logger, checkInterval: checkInterval).whileRunning(body)
}
