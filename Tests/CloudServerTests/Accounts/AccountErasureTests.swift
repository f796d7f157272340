import CloudAssets
import CloudCore
import CloudHTTP
@testable import CloudPostgres
import CloudRuntime
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import SportsDomain
import StadiumCloudClient
@testable import CloudSync
import Synchronization
import Testing

/// Erasing an account (docs/PRIVACY.md): afterwards no row of any table and no byte of the asset store belongs to
/// the person, whatever they had, while another account's data is untouched byte for byte. Every table is read, so
/// a table added later is covered.
@Suite(.bounded) struct AccountErasureTests {
    @Test func nothingOfAnErasedAccountRemainsAndNobodyElsesDataChanges() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let logger = TestDatabase.logger
            try await records.applySchema(try CanonicalFixtures.schema.get(), to: TestServer.development, logger: logger)
            let alice = server.alice
            _ = try await server.dependencies.credentials.setPassword(accountName: "alice", password: "correct horse battery", logger: logger)

            // Everything a person can have: records in two zones, a photo's bytes, an unfinished upload, a stored
            // answer, a subscription, a push token, a trip poll of their own and a vote in someone else's, the
            // rate buckets of their requests.
            try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Trips"]]]]], as: alice)
            try await server.modify([Op.create("alice-visit", type: "StadiumVisit", ["notes": "Opening Day"])], as: alice)
            try await server.modify([Op.create("alice-trip", ["note": "June"])], zone: "Trips", as: alice)
            let photo = try await server.upload(TestData.bytes(5_000), as: alice)
            #expect(try await server.savePhoto("alice-photo", photo, as: alice).anyError == nil)
            let checksum = try #require(photo["fileChecksum"]?.stringValue)
            let unfinished = try await server.uploadURL(as: alice)
            _ = try await server.send(unfinished, TestData.bytes(100), headers: [HTTPField.Name("Upload-Length")!: "1000"])
            _ = try await IdempotencyTests.modify(
                server, ["operations": [Op.create("alice-once", ["note": "stored answer"])]], key: "alice-key-1", as: alice)
            try await server.call(
                "subscriptions/modify",
                ["operations": [["operationType": "create", "subscription": ["subscriptionID": "alice-sub", "subscriptionType": "database"]]]],
                as: alice)
            #expect(try await server.call("tokens/create", [:], as: alice).status == 200)
            let alicesPoll = UnlistedZone.prefix + "QWxpY2VzUG9sbDIwMjc"
            let bobsPoll = UnlistedZone.prefix + "Qm9ic1BvbGwyMDI3"
            let poll = Op.typed(
                "create", TripPolls.pollRecordName, type: TripPolls.pollType,
                fields: ["title": ["value": "Where next"], "options": ["value": ["East", "West"]], "closesAt": ["value": 1_900_000_000_000]])
            for (zone, owner) in [(alicesPoll, alice), (bobsPoll, server.bob)] {
                try await server.call(
                    "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(zone)]]]]],
                    database: "public",
                    as: owner)
                #expect(try await server.modify([poll], zone: zone, database: "public", as: owner).anyError == nil)
            }
            #expect(try await server.modify([TripPollTests.vote(alice, 0)], zone: bobsPoll, database: "public", as: alice).anyError == nil)
            #expect(
                try await server.modify([TripPollTests.vote(server.bob, 1)], zone: alicesPoll, database: "public", as: server.bob).anyError == nil)
            // Bob's own data, to compare byte for byte.
            try await server.modify([Op.create("bob-visit", type: "StadiumVisit", ["notes": "Fenway"])], as: server.bob)
            let bobsPhoto = try await server.upload(TestData.bytes(3_000), as: server.bob)
            #expect(try await server.savePhoto("bob-photo", bobsPhoto, as: server.bob).anyError == nil)
            let bobBefore = try await Self.rows(of: server.bob.account, records)
            let aliceDatabases = try await Self.databases(of: alice.account, records)
            #expect(aliceDatabases.count == 1)

            let inFlight = try await server.uploadURL(as: alice)
            let erased = try #require(
                try await eraseAccount(
                    "alice", records: records, credentials: server.dependencies.credentials, assets: server.dependencies.assets, logger: logger))
            // An upload that finishes after the erasure stores nothing and says why.
            let late = TestData.bytes(2_000)
            let finished = try await server.send(inFlight, late)
            #expect(finished.status == .notFound, "\(String(buffer: finished.body))")
            #expect(try await server.dependencies.assets.size(owner: "db\(aliceDatabases[0])", checksum: TestData.hex(late)) == nil)
            #expect(erased.databases == 1 && erased.assets == 1 && erased.publicRecords == 2, "\(erased)")

            // Her session is refused, as any unknown one (the SDK then signs out).
            let refused = try await server.call("records/query", ["query": ["recordType": "Visit"]], as: alice)
            #expect(refused.status == 401 || refused.status == 421, "\(refused.json)")
            // No row of any table names her, her id, her databases, their zones or her sessions.
            let leftovers = try await Self.rowsNaming(alice.account, databases: aliceDatabases, records)
            #expect(leftovers.isEmpty, "\(leftovers)")
            // No byte of hers in the asset store: no photo, no upload in progress.
            #expect(try await server.dependencies.assets.size(owner: "db\(aliceDatabases[0])", checksum: checksum) == nil)
            #expect(unfinished.contains("/assets/upload/db\(aliceDatabases[0])-"))
            #expect(try await server.dependencies.assets.discardUploads(prefix: "db\(aliceDatabases[0])-") == 0)
            // Bob's rows are as they were; his poll lost her vote, his vote in her poll is his still.
            let bobAfter = try await Self.rows(of: server.bob.account, records)
            #expect(bobAfter == bobBefore)
            let votes = try await server.call(
                "records/query", ["zoneID": ["zoneName": .string(bobsPoll)], "query": ["recordType": .string(TripPolls.voteType)]],
                database: "public", as: server.bob)
            #expect(votes.status == 200 && votes.records.isEmpty, "\(votes.json)")
            #expect(
                try await server.dependencies.assets.size(
                    owner: "db\(try await server.bob.databaseID(server))", checksum: bobsPhoto["fileChecksum"]!.stringValue!) == 3_000)
            // Erasing again finds nobody.
            #expect(
                try await eraseAccount(
                    "alice", records: records, credentials: server.dependencies.credentials, assets: server.dependencies.assets, logger: logger)
                    == nil)
        }
    }

    /// The person erases their account from a device (`users/delete`, the SDK's `deleteAccount`): only with its
    /// password; then the device forgets them, and the account's other device is refused and told why.
    @Test func aPersonErasesTheirAccountFromADeviceWithTheirPassword() async throws {
        try await ClientSyncTests.run { server, folder in
            let phone = try await ClientSyncTests.device(server, folder, "phone")
            let tablet = try await ClientSyncTests.device(server, folder, "tablet")
            _ = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_743_800_000_000)
            try await phone.sync()
            try await tablet.sync()
            #expect(try tablet.visits().count == 1)

            await #expect { try await phone.deleteAccount(password: "not it") } throws: { ($0 as? SyncError)?.code == "ACCESS_DENIED" }
            let kept = try phone.visits().count
            #expect(phone.isSignedIn && kept == 1)
            let noPassword = try await server.call("users/delete", [:], as: server.alice)
            #expect(noPassword.status == 400 && noPassword.errorCode == "BAD_REQUEST")
            let onPublic = try await server.call(
                "users/delete", ["password": .string(ClientSyncTests.password)], database: "public", as: server.alice)
            #expect(onPublic.status == 400)

            try await phone.deleteAccount(password: ClientSyncTests.password)
            let forgotten = try phone.visits()
            #expect(!phone.isSignedIn && forgotten.isEmpty)
            await #expect { try await tablet.sync() } throws: { ($0 as? SyncError)?.code == "AUTHENTICATION_REQUIRED" }
            #expect(!tablet.isSignedIn, "the other device is signed out")
            let leftovers = try await Self.rowsNaming(server.alice.account, databases: [], server.dependencies.records)
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
    }

    /// The account is erased from the phone while the tablet syncs and has a photo upload in progress: the tablet's
    /// upload stores nothing more, its sync is told to sign in again (and the SDK signs out), and nothing of the
    /// account is left in PostgreSQL or the asset store, no partial upload either.
    @Test func anAccountErasedWhileAnotherDeviceSyncsAndUploadsLeavesNothing() async throws {
        try await ClientSyncTests.run { server, folder in
            var configuration = SyncConfiguration()
            configuration.chunkSize = 256 * 1024
            let network = FlakyTransport()
            let phone = try await ClientSyncTests.device(server, folder, "phone")
            let tablet = try await ClientSyncTests.device(server, folder, "tablet", transport: network, configuration: configuration)
            let visit = try tablet.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_717_243_200_000).recordName
            try await tablet.sync()
            try await phone.sync()
            let database = try #require(try await Self.databases(of: server.alice.account, server.dependencies.records).first)
            let file = URL(fileURLWithPath: folder + "/photo.jpg")
            try Data(TestData.bytes(1024 * 1024)).write(to: file)
            network.state.withLock { $0.cutAfter["/assets/upload/"] = 2 }
            await #expect(throws: SyncError.self) { try await tablet.addPhoto(file, toVisit: visit) }
            #expect(try await server.dependencies.assets.uploadedLength(of: try #require(Self.uploads(network).first)) == 2 * 256 * 1024)

            let erased = Mutex(false)
            network.state.withLock {
                $0.offline = false
                $0.cutAfter = [:]
                $0.before["/assets/upload/"] = {
                    guard
                        erased.withLock({ done in
                            defer { done = true }; return !done
                        })
                    else { return }
                    try await phone.deleteAccount(password: ClientSyncTests.password)
                }
            }
            await #expect { try await tablet.sync() } throws: { ($0 as? SyncError)?.code == "AUTHENTICATION_REQUIRED" }
            #expect(erased.withLock { $0 } && !tablet.isSignedIn && !phone.isSignedIn)
            // The erasure ran as the tablet asked where its upload stood: the upload is gone (404), no byte more is sent.
            let afterErasure = network.sent("/assets/upload/").drop { $0.method != "HEAD" }
            #expect(afterErasure.map(\.status) == [404], "\(Array(afterErasure))")
            let leftovers = try await Self.rowsNaming(server.alice.account, databases: [database], server.dependencies.records)
            #expect(leftovers.isEmpty, "\(leftovers)")
            #expect(try await server.dependencies.assets.discardUploads(prefix: "db\(database)-") == 0, "no upload in progress is left")
            #expect(try await server.dependencies.assets.blobs(olderThan: -1).filter { $0.owner == "db\(database)" }.isEmpty)
        }
    }

    /// Erasure ends the account's long polls at once (docs/PRIVACY.md), whatever they wait on: a database token, zone
    /// tokens, the web courier. Each is answered what its next request would get, 421 (a device signs out) or 401 for
    /// a courier token gone with the account, not `changed: false` at its timeout; another account's wait holds on.
    @Test func anErasureEndsTheAccountsLongPollsAtOnce() async throws {
        try await TestServer.run { server in
            let feed = server.dependencies.records.changes.feed
            let databaseToken = try #require(try await server.call("changes/database", [:], as: server.alice).json["syncToken"])
            let zoneToken = try await server.pull().token
            let courier = try await SubscriptionTests.courierURL(server).path
            let bobsToken = try #require(try await server.call("changes/database", [:], as: server.bob).json["syncToken"])
            async let databaseWait = server.call("changes/wait", ["syncToken": databaseToken, "timeout": 30], as: server.alice)
            async let zoneWait = server.call("changes/wait", LiveSyncTests.zoneWait(zoneToken), as: server.alice)
            async let courierPoll = SubscriptionTests.poll(server, courier, timeout: 30)
            async let bobsWait = server.call("changes/wait", ["syncToken": bobsToken, "timeout": 30], as: server.bob)
            try await LiveSyncTests.waiters(4, on: feed)

            _ = try await eraseAccount(
                "alice", records: server.dependencies.records, credentials: server.dependencies.credentials, assets: server.dependencies.assets,
                logger: TestDatabase.logger)
            for answer in [try await databaseWait, try await zoneWait] {
                #expect(answer.status == 421 && answer.errorCode == "AUTHENTICATION_REQUIRED", "\(answer.json)")
            }
            #expect(try await courierPoll.status == 401)
            #expect(feed.waiting == 1, "Bob's wait holds on")
            try await server.modify([Op.create("bobs")], as: server.bob)
            #expect(try await bobsWait.json["changed"] == true)
        }
    }

    /// An upload whose bytes were arriving as its account was erased (a whole body, and a chunk of a resumable one),
    /// and the offset of one begun before: NOT_FOUND (404) as docs/ASSETS.md says, never "has no bytes" nor offset 0,
    /// and none of their bytes are kept.
    @Test func anUploadUnderwayWhenItsAccountIsErasedIsNotFound() async throws {
        try await TestServer.run(assets: { InterposedAssetStore($0) }) { server in
            let store = try #require(server.dependencies.assets as? InterposedAssetStore)
            let uploadLength = HTTPField.Name("Upload-Length")!
            let cases: [(name: String, account: TestAccount, headers: HTTPFields)] = [
                ("alice", server.alice, [:]), ("bob", server.bob, [uploadLength: "5000"]),
            ]
            for (name, account, headers) in cases {
                let database = try await account.databaseID(server)
                let begun = try await server.uploadURL(as: account)
                #expect(try await server.send(begun, TestData.bytes(100), headers: [uploadLength: "1000"]).status == .ok)
                let underway = try await server.uploadURL(as: account)
                store.once(afterBytes: {
                    _ = try await eraseAccount(
                        name, records: server.dependencies.records, credentials: server.dependencies.credentials, assets: store,
                        logger: TestDatabase.logger)
                })
                let finished = try await server.send(underway, TestData.bytes(2_000), headers: headers)
                #expect(finished.status == .notFound, "\(name): \(String(buffer: finished.body))")
                #expect(try JSONValue.parse(finished.body.readableBytesView)["serverErrorCode"] == "NOT_FOUND", "\(String(buffer: finished.body))")
                let resume = try await server.send(begun, method: .head)
                #expect(resume.status == .notFound && resume.headers[HTTPField.Name("Upload-Offset")!] == nil, "\(name): \(resume.status)")
                #expect(try await store.discardUploads(prefix: "db\(database)-") == 0, "no upload in progress is left")
                #expect(try await store.blobs(olderThan: -1).filter { $0.owner == "db\(database)" }.isEmpty)
            }
        }
    }

    static func uploads(_ network: FlakyTransport) -> [String] {
        network.sent("/assets/upload/").compactMap { $0.path.split(separator: "/").last.map(String.init) }
    }

    /// A request authenticated a moment before the erasure (another process's credential cache holds a token for up to
    /// a second) reaches a database that is gone, or would create one for an account that is gone: 421, as its next
    /// request gets, never a 500, and nothing is written.
    @Test func aRequestAuthenticatedJustBeforeTheErasureIsToldToSignIn() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let logger = TestDatabase.logger
            try await server.modify([Op.create("visit-1", ["notes": "before"])], as: server.alice)
            let database = try await records.database(
                container: TestServer.development.container, environment: "development", scope: .private, owner: server.alice.account, logger: logger)
            let eve = try await server.dependencies.credentials.createAccount(name: "eve", idleMs: 3_600_000, logger: logger)
            for name in ["alice", "eve"] {
                _ = try await eraseAccount(
                    name, records: records, credentials: server.dependencies.credentials, assets: server.dependencies.assets, logger: logger)
            }
            let stamp = ChangeStamp(timestamp: 1, userRecordName: server.alice.account.userRecordName, deviceID: "late")
            let operation = RecordOperation(type: .create, recordName: "visit-2", recordType: "Visit", fields: ["notes": ["value": "after"]])
            await #expect {
                try await records.modify([operation], zoneName: defaultZoneName, atomic: false, in: database, stamp: stamp, logger: logger)
            } throws: { ($0 as? CloudError)?.code == .authenticationRequired }
            await #expect {
                try await records.database(
                    container: TestServer.development.container, environment: "development", scope: .private, owner: eve.account, logger: logger)
            } throws: { ($0 as? CloudError)?.code == .authenticationRequired }
            #expect(try await Self.rowsNaming(eve.account, databases: [], records).isEmpty)
            #expect(try await Self.rowsNaming(server.alice.account, databases: [database.id], records).isEmpty)
        }
    }

    static func databases(of account: Account, _ records: RecordStore) async throws -> [Int64] {
        try await records.client.reading { connection in
            try await connection.query("SELECT id FROM databases WHERE owner_account_id = \(account.id) ORDER BY id", logger: TestDatabase.logger)
                .decode(Int64.self).all()
        }
    }

    /// Every row of the account's private databases, as text, in a stable order.
    static func rows(of account: Account, _ records: RecordStore) async throws -> [String] {
        try await records.client.reading { connection in
            try await connection.query(
                """
                SELECT r::text FROM records r JOIN zones z ON z.id = r.zone_id JOIN databases d ON d.id = z.database_id
                WHERE d.owner_account_id = \(account.id) ORDER BY z.zone_name, r.record_name
                """, logger: TestDatabase.logger
            ).decode(String.self).all()
                + connection.query(
                    "SELECT a::text FROM assets a JOIN databases d ON d.id = a.database_id WHERE d.owner_account_id = \(account.id) ORDER BY 1",
                    logger: TestDatabase.logger
                ).decode(String.self).all()
        }
    }

    /// `table: row` for each row of any table of the database that names the account (its user record name or
    /// account name in any column) or holds its id, one of its databases, one of their zones or one of its sessions
    /// in an id column.
    static func rowsNaming(_ account: Account, databases: [Int64], _ records: RecordStore) async throws -> [String] {
        try await records.client.reading { connection in
            let columns = try await connection.query(
                """
                SELECT table_name::text, column_name::text FROM information_schema.columns
                WHERE table_schema = 'public' AND table_name NOT LIKE 'pg\\_%' ORDER BY table_name, ordinal_position
                """, logger: TestDatabase.logger
            ).decode((String, String).self).all()
            var found: [String] = []
            for table in Set(columns.map(\.0)).sorted() {
                var conditions = ["t::text LIKE '%' || $1 || '%'", "t::text ~ ('\\m' || $2 || '\\M')"]
                for (name, column) in columns where name == table {
                    switch column {
                    case "account_id", "owner_account_id": conditions.append("t.\(column) = $3")
                    case "database_id": conditions.append("t.\(column) = ANY($4)")
                    default: break
                    }
                }
                var binds = PostgresBindings()
                binds.append(account.userRecordName)
                binds.append(account.name)
                binds.append(account.id)
                binds.append(databases)
                let query = PostgresQuery(unsafeSQL: "SELECT t::text FROM \(table) t WHERE \(conditions.joined(separator: " OR "))", binds: binds)
                for row in try await connection.query(query, logger: TestDatabase.logger).decode(String.self).all() {
                    found.append("\(table): \(row)")
                }
            }
            return found
        }
    }
}
