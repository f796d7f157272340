import Canon
import CloudAssets
import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import Testing

/// A signed-in test account.
struct TestAccount: Sendable {
    var account: Account
    var webAuthToken: String
}

/// A server on its own fresh database, with an API token, an operator token and two accounts.
struct TestServer: Sendable {
    let client: any TestClientProtocol
    let dependencies: ServerDependencies
    let apiToken: String
    let operatorToken: String
    let alice: TestAccount
    let bob: TestAccount

    static let base = "/database/1/iCloud.com.sportstime.test/development"

    /// Runs `body` against a new server and database.
    /// With `.live` the server listens on a free loopback port (`client.port`), for tests that use real clients.
    static func run(
        _ setup: TestingSetup = .router, configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (TestServer) async throws -> Void
    ) async throws {
        try await withTestStore { dependencies in
            var configuration = ServerConfiguration()
            configuration.port = 0
            configuration.purgeInterval = .seconds(86_400)
            configure(&configuration)
            let logger = TestDatabase.logger
            let credentials = dependencies.credentials
            let apiToken = try await credentials.createAPIToken(role: .client, label: "test", logger: logger)
            let operatorToken = try await credentials.createAPIToken(role: .operator, label: "test", logger: logger)
            let alice = try await credentials.createAccount(name: "alice", logger: logger)
            let bob = try await credentials.createAccount(name: "bob", logger: logger)
            let app = buildApplication(
                configuration: configuration, dependencies: dependencies,
                extensions: CanonicalEndpoints(records: dependencies.records).endpoints, logger: logger)
            try await app.test(setup) { client in
                try await body(TestServer(
                    client: client, dependencies: dependencies, apiToken: apiToken, operatorToken: operatorToken,
                    alice: TestAccount(account: alice.account, webAuthToken: alice.webAuthToken),
                    bob: TestAccount(account: bob.account, webAuthToken: bob.webAuthToken)))
            }
        }
    }

    /// A response: HTTP status and parsed JSON body.
    struct Reply: Sendable {
        var status: Int
        var json: JSONValue
        var headers: HTTPFields

        var errorCode: String? { self.json["serverErrorCode"]?.stringValue }
        var records: [JSONValue] { self.json["records"]?.arrayValue ?? [] }
    }

    /// POSTs (or GETs when `body` is nil) to a database endpoint as `account` (nil: API token only).
    @discardableResult
    func call(
        _ path: String, _ body: JSONValue? = nil, database: String = "private", as account: TestAccount? = nil,
        apiToken: String? = nil, rawBody: String? = nil
    ) async throws -> Reply {
        var query = "ckAPIToken=\(apiToken ?? self.apiToken)"
        if let account { query += "&ckWebAuthToken=\(account.webAuthToken)" }
        let uri = "\(Self.base)/\(database)/\(path)?\(query)"
        let bytes = rawBody ?? body.map(JSONWriter.encode)
        return try await self.client.execute(
            uri: uri, method: bytes == nil ? .get : .post, headers: [.contentType: "text/plain"],
            body: bytes.map { ByteBuffer(string: $0) }
        ) { response in
            let json = response.body.readableBytes == 0 ? JSONValue.null : try JSONValue.parse(response.body.readableBytesView)
            return Reply(status: Int(response.status.code), json: json, headers: response.headers)
        }
    }

    /// `records/modify` in the private database as Alice unless told otherwise.
    @discardableResult
    func modify(
        _ operations: [JSONValue], zone: String? = nil, atomic: Bool? = nil, database: String = "private", as account: TestAccount? = nil,
        apiToken: String? = nil
    ) async throws -> Reply {
        var body: [String: JSONValue] = ["operations": .array(operations)]
        if let zone { body["zoneID"] = ["zoneName": .string(zone)] }
        if let atomic { body["atomic"] = .bool(atomic) }
        return try await self.call(
            "records/modify", .object(body), database: database, as: database == "private" ? (account ?? self.alice) : account,
            apiToken: apiToken)
    }
}

/// Runs `body` with server dependencies on a fresh database.
func withTestStore(_ body: (ServerDependencies) async throws -> Void) async throws {
    let url = try await TestDatabase.shared.makeDatabase()
    try await withPostgresClient(url, logger: TestDatabase.logger) { client in
        let assetsRoot = NSTemporaryDirectory() + "stadiumcloud-test-assets-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: assetsRoot) }
        let assets = try FileAssetStore(root: assetsRoot)
        let dependencies = try await ServerDependencies(
            client: client, migrations: try Migration.load(from: TestDatabase.migrationsPath), assets: assets, logger: TestDatabase.logger)
        try await body(dependencies)
    }
}

/// Builders for wire operations.
enum Op {
    static func create(_ name: String, type: String = "Visit", _ fields: [String: JSONValue] = [:]) -> JSONValue {
        ["operationType": "create", "record": ["recordName": .string(name), "recordType": .string(type), "fields": .object(fields.mapValues { ["value": $0] })]]
    }

    static func typed(_ operation: String, _ name: String, tag: String? = nil, type: String? = nil, fields: [String: JSONValue]? = nil) -> JSONValue {
        var record: [String: JSONValue] = ["recordName": .string(name)]
        if let tag { record["recordChangeTag"] = .string(tag) }
        if let type { record["recordType"] = .string(type) }
        if let fields { record["fields"] = .object(fields) }
        return ["operationType": .string(operation), "record": .object(record)]
    }
}
