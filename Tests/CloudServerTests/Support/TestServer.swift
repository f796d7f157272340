import Canon
import CloudAssets
import CloudCore
import CloudHTTP
import CloudPostgres
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresNIO
import Synchronization
import Testing

/// A signed-in test account.
struct TestAccount: Sendable {
    var account: Account
    var webAuthToken: String
}

/// A server on its own fresh database, with an API token, a server-to-server key and two accounts.
struct TestServer: Sendable {
    let client: any TestClientProtocol
    let dependencies: ServerDependencies
    /// What the server was built with (its `signals` among it).
    let configuration: ServerConfiguration
    let apiToken: String
    /// An operator's server-to-server key, registered with the server.
    let serverKey: P256.Signing.PrivateKey
    let serverKeyID: String
    let alice: TestAccount
    let bob: TestAccount

    static let base = "/database/1/iCloud.com.sportstime.test/development"
    /// The schema scope of `base`.
    static let development = SchemaScope(container: "iCloud.com.sportstime.test", environment: "development")

    /// Runs `body` against a new server and database.
    /// With `.live` the server listens on a free loopback port (`client.port`), for tests that use real clients.
    /// `assets` wraps the server's asset store (an `InterposedAssetStore`).
    static func run(
        _ setup: TestingSetup = .router, configure: (inout ServerConfiguration) -> Void = { _ in },
        assets: @escaping @Sendable (any AssetStore) -> any AssetStore = { $0 },
        logger: Logger = TestDatabase.logger, _ body: @Sendable (TestServer) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.purgeInterval = .seconds(86_400)
        configuration.containers = ["iCloud.com.sportstime.test"]
        // The live test client opens its one connection at the start and may leave it unused for minutes while
        // devices talk to the server through their own: no timeout closes it under a test.
        configuration.connections.headTimeout = .seconds(3600)
        configuration.connections.idleTimeout = .seconds(3600)
        // Two minutes, not the 10 s default: with every suite running at once on a busy 2-core CI machine a plain
        // query waited over 10 s for a connection and was answered TRY_AGAIN_LATER. These tests check answers;
        // DatabaseDeadlineTests checks the deadline itself.
        configuration.databaseTimeout = .seconds(120)
        configure(&configuration)
        // A test cancelled by its suite's time limit (`.bounded`) says which step it was stuck in.
        let phase = Phase("waiting for a database")
        let name = Test.current?.name ?? "?"
        try await withTaskCancellationHandler {
            try await Self.serve(configuration, assets: assets, logger: logger, phase: phase, setup, body)
        } onCancel: {
            FileHandle.standardError.write(Data("cancelled: \(name), \(phase.now)\n".utf8))
        }
    }

    private static func serve(
        _ configuration: ServerConfiguration, assets: @Sendable (any AssetStore) -> any AssetStore, logger: Logger, phase: Phase,
        _ setup: TestingSetup, _ body: @Sendable (TestServer) async throws -> Void
    ) async throws {
        try await withTestStore(configuration) { [configuration] dependencies in
            phase.set("setting up")
            var wrapped = dependencies
            wrapped.assets = assets(dependencies.assets)
            let dependencies = wrapped
            let credentials = dependencies.credentials
            let apiToken = try await credentials.createAPIToken(label: "test", logger: logger)
            let serverKey = P256.Signing.PrivateKey()
            let serverKeyID = try await credentials.registerServerKey(
                publicKeyPEM: serverKey.publicKey.pemRepresentation, label: "test", logger: logger)
            let alice = try await credentials.createAccount(name: "alice", idleMs: 3_600_000, logger: logger)
            let bob = try await credentials.createAccount(name: "bob", idleMs: 3_600_000, logger: logger)
            let app = buildApplication(
                configuration: configuration, dependencies: dependencies,
                extensions: CanonicalEndpoints(records: dependencies.records).extensions, logger: logger)
            phase.set("starting the server")
            try await app.test(setup) { client in
                phase.set("in the test's body")
                defer { phase.set("stopping the server") }
                try await body(
                    TestServer(
                        client: client, dependencies: dependencies, configuration: configuration, apiToken: apiToken,
                        serverKey: serverKey, serverKeyID: serverKeyID,
                        alice: TestAccount(account: alice.account, webAuthToken: alice.webAuthToken),
                        bob: TestAccount(account: bob.account, webAuthToken: bob.webAuthToken)))
            }
            phase.set("closing the database")
        }
    }

    /// A response: HTTP status and parsed JSON body.
    struct Reply: Sendable {
        var status: Int
        var json: JSONValue
        var headers: HTTPFields

        var errorCode: String? { self.json["serverErrorCode"]?.stringValue }
        var records: [JSONValue] { self.json["records"]?.arrayValue ?? [] }
        /// The culprit of a failed atomic batch, else the request's error, else its first per-record one (a malformed
        /// operation fails alone, in a 200 answer).
        var anyError: JSONValue? {
            if let culprit = self.records.first(where: { $0["serverErrorCode"] != nil && $0["serverErrorCode"] != "ATOMIC_ERROR" }) { return culprit }
            return self.errorCode != nil ? self.json : self.records.first { $0["serverErrorCode"] != nil }
        }
        var anyErrorCode: String? { self.anyError?["serverErrorCode"]?.stringValue }
    }

    /// POSTs (or GETs when `body` is nil) to a database endpoint as `account` (nil: API token only), or signed
    /// with the server-to-server key.
    @discardableResult
    func call(
        _ path: String, _ body: JSONValue? = nil, database: String = "private", environment: String = "development", as account: TestAccount? = nil,
        apiToken: String? = nil, rawBody: String? = nil, signed: Bool = false, contentType: String = "text/plain"
    ) async throws -> Reply {
        let bytes = rawBody ?? body.map(JSONWriter.encode)
        var headers: HTTPFields = [.contentType: contentType]
        var uri = "/database/1/\(Self.development.container)/\(environment)/\(database)/\(path)"
        if signed {
            for (name, value) in Self.signatureHeaders(key: self.serverKey, keyID: self.serverKeyID, body: Array((bytes ?? "").utf8), path: uri) {
                headers[HTTPField.Name(name)!] = value
            }
        } else {
            uri += "?ckAPIToken=\(apiToken ?? self.apiToken)"
            if let account { uri += "&ckWebAuthToken=\(account.webAuthToken)" }
        }
        return try await self.client.execute(
            uri: uri, method: bytes == nil ? .get : .post, headers: headers,
            body: bytes.map { ByteBuffer(string: $0) }
        ) { response in
            let json = response.body.readableBytes == 0 ? JSONValue.null : try JSONValue.parse(response.body.readableBytesView)
            return Reply(status: Int(response.status.code), json: json, headers: response.headers)
        }
    }

    /// `records/modify` in the private database as Alice unless told otherwise.
    @discardableResult
    func modify(
        _ operations: [JSONValue], zone: String? = nil, atomic: Bool? = nil, database: String = "private", environment: String = "development",
        as account: TestAccount? = nil, apiToken: String? = nil, signed: Bool = false
    ) async throws -> Reply {
        var body: [String: JSONValue] = ["operations": .array(operations)]
        if let zone { body["zoneID"] = ["zoneName": .string(zone)] }
        if let atomic { body["atomic"] = .bool(atomic) }
        return try await self.call(
            "records/modify", .object(body), database: database, environment: environment,
            as: database == "private" ? (account ?? self.alice) : account,
            apiToken: apiToken, signed: signed)
    }

    /// CloudKit's server-to-server headers, signed the way MistKit does: `date:base64(sha256(body)):path`.
    static func signatureHeaders(
        key: P256.Signing.PrivateKey, keyID: String, body: [UInt8], path: String, date: Date = Date(), bodyHash: String? = nil
    ) -> [String: String] {
        let dateText = date.formatted(.iso8601)
        let hash = bodyHash ?? Data(SHA256.hash(data: body)).base64EncodedString()
        let signature = try! key.signature(for: Data("\(dateText):\(hash):\(path)".utf8))
        return [
            "X-Apple-CloudKit-Request-KeyID": keyID, "X-Apple-CloudKit-Request-ISO8601Date": dateText,
            "X-Apple-CloudKit-Request-SignatureV1": signature.derRepresentation.base64EncodedString(),
        ]
    }
}

/// Runs `body` with server dependencies on a fresh database, built as `serve` builds them (assets in a
/// temporary folder or the `STADIUMCLOUD_TEST_ASSETS` bucket, cheap password hashes).
func withTestStore(_ configuration: ServerConfiguration = ServerConfiguration(), _ body: (ServerDependencies) async throws -> Void) async throws {
    await TestSlots.shared.acquire()
    do {
        try await withTestStoreInSlot(configuration, body)
    } catch {
        await TestSlots.shared.release()
        throw error
    }
    await TestSlots.shared.release()
}

private func withTestStoreInSlot(_ configuration: ServerConfiguration, _ body: (ServerDependencies) async throws -> Void) async throws {
    let url = try await TestDatabase.shared.makeDatabase()
    var configuration = configuration
    configuration.assets = TestAssets.location()
    configuration.auth.passwordHashLog2Rounds = 10
    defer { TestAssets.remove(configuration.assets) }
    // The pool's check of PostgreSQL is patient here: with every suite at once on a busy 2-core CI machine a check and
    // its probe took over the default second, the pool called PostgreSQL away, and two tests got 503 TRY_AGAIN_LATER.
    // The outage handling itself is the fault scenarios' (a real server, default settings).
    try await withDatabasePool(url, checkInterval: .seconds(30), logger: TestDatabase.logger) { [configuration] client in
        let stores = Stores(
            client: client, clock: configuration.clock, passwordHashLog2Rounds: configuration.auth.passwordHashLog2Rounds,
            limits: configuration.limits, justInTimeSchema: configuration.justInTimeSchema)
        let dependencies = try await ServerDependencies.live(
            stores: stores, configuration: configuration, migrations: try Migration.load(from: TestDatabase.migrationsPath),
            logger: TestDatabase.logger)
        try await body(dependencies)
    }
}

/// Builders for wire operations.
enum Op {
    static func create(_ name: String, type: String = "Visit", _ fields: [String: JSONValue] = [:]) -> JSONValue {
        [
            "operationType": "create",
            "record": ["recordName": .string(name), "recordType": .string(type), "fields": .object(fields.mapValues { ["value": $0] })],
        ]
    }

    static func typed(_ operation: String, _ name: String, tag: String? = nil, type: String? = nil, fields: [String: JSONValue]? = nil) -> JSONValue {
        var record: [String: JSONValue] = ["recordName": .string(name)]
        if let tag { record["recordChangeTag"] = .string(tag) }
        if let type { record["recordType"] = .string(type) }
        if let fields { record["fields"] = .object(fields) }
        return ["operationType": .string(operation), "record": .object(record)]
    }
}

/// Which step of `TestServer.run` a test is in, for the note a cancelled test leaves.
final class Phase: Sendable {
    private let text: Mutex<String>

    init(_ text: String) { self.text = Mutex(text) }

    var now: String { self.text.withLock { $0 } }

    func set(_ text: String) { self.text.withLock { $0 = text } }
}
