import CloudCore
import CloudHTTP
@testable import CloudPostgres
import Foundation
import HTTPTypes
import HummingbirdTesting
import PostgresNIO
import Synchronization
import Testing

/// A restore, a point-in-time recovery or a promoted replica forks the database's history (docs/SYNC.md, "Restores
/// and failovers"): nothing signed in the lost history is honoured, so no device skips a change and no session,
/// URL or receipt changes hands. The fault scenarios (`scripts/faults/run --only restore-new-db restore-clean
/// failover`) fork it for real; here the recorded fingerprint is changed, as a restore elsewhere changes it.
@Suite(.bounded) struct HistoryTests {
    /// Makes the database look restored: its recorded fingerprint is not its own, and the next check begins a new history.
    static func fork(_ server: TestServer) async throws {
        let records = server.dependencies.records
        try await records.client.query("UPDATE history SET fingerprint = 'another cluster/00000002/1/1'", logger: TestDatabase.logger)
        try await records.client.confirmHistory(logger: TestDatabase.logger)
    }

    /// A restore from a backup taken before `records` were written: they are gone, and the history forked.
    static func restore(_ server: TestServer, losing records: [String]) async throws {
        try await server.dependencies.records.client.query("DELETE FROM records WHERE record_name = ANY(\(records))", logger: TestDatabase.logger)
        try await Self.fork(server)
    }

    @Test func tokensOfALostHistoryExpireAndStartingOverFindsEverything() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("kept")])
            let zone = try await server.pull()
            let publicZone = try await server.pull(database: "public")
            let database = try #require(try await server.call("changes/database", [:], as: server.alice).json["syncToken"]?.stringValue)
            let before = try #require(server.dependencies.records.history.epoch)

            try await Self.fork(server)
            let after = try #require(server.dependencies.records.history.epoch)
            #expect(after.id != before.id && !after.acceptsUnmarked)

            await #expect(throws: CloudError.changeTokenExpired) { _ = try await server.pull(from: zone.token) }
            await #expect(throws: CloudError.changeTokenExpired) { _ = try await server.pull(from: publicZone.token, database: "public") }
            let databaseReply = try await server.call("changes/database", ["syncToken": .string(database)], as: server.alice)
            #expect(databaseReply.status == 410 && databaseReply.errorCode == "CHANGE_TOKEN_EXPIRED")
            // A long poll with the old token is told something changed, so the device fetches and learns.
            let wait = try await server.call(
                "changes/wait", ["syncToken": .string(database), "timeout": 0], as: server.alice)
            #expect(wait.json["changed"] == true, "\(wait.json)")

            let again = try await server.pull()
            #expect(again.records.map { $0["recordName"] } == ["kept"])
            #expect(try await server.pull(from: again.token).records.isEmpty, "a token of the new history is good")
        }
    }

    @Test func anotherProcessAdoptsTheNewHistoryInsteadOfForkingAgain() async throws {
        try await TestServer.run { server in
            try await Self.fork(server)
            let epoch = try #require(server.dependencies.records.history.epoch)
            // A second look (another process's first connection) finds the fingerprint it recorded.
            try await server.dependencies.records.client.confirmHistory(logger: TestDatabase.logger)
            #expect(server.dependencies.records.history.epoch == epoch)
        }
    }

    /// A restore no fingerprint notices (a file-system snapshot put back) leaves tokens ahead of their database.
    @Test func aTokenAheadOfItsDatabaseExpires() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("r")])
            let records = server.dependencies.records
            var token = try ChangeToken.decode(try await server.pull().token, kind: .zone, with: records.signer)
            token.seq += 10
            await #expect(throws: CloudError.changeTokenExpired) { _ = try await server.pull(from: token.encode(with: records.signer)) }
        }
    }

    @Test func uploadURLsAndReceiptsOfALostHistoryAreRefused() async throws {
        try await TestServer.run { server in
            let url = try await server.uploadURL(as: server.alice)
            let uploaded = try await server.upload(TestData.bytes(1_000))
            try await Self.fork(server)
            #expect(try await server.send(url, TestData.bytes(10)).status == .forbidden)
            let save = try await server.savePhoto("photo", uploaded)
            #expect(save.anyErrorCode == "ACCESS_DENIED" || save.anyErrorCode == "BAD_REQUEST", "\(save.json)")
            // Asked again, they work.
            #expect(try await server.savePhoto("photo", try await server.upload(TestData.bytes(1_000))).anyErrorCode == nil)
        }
    }

    /// Session ids came from a sequence that a restore rolls back: a lost session's id went to the next sign-in,
    /// and the lost session's token then opened that person's account.
    @Test func sessionIDsAreRandomSoALostSessionNeverOpensAnotherAccount() async throws {
        try await TestServer.run { server in
            let credentials = server.dependencies.credentials
            var ids: [Int64] = []
            for index in 0..<8 {
                let created = try await credentials.createAccount(name: "person\(index)", idleMs: 3_600_000, logger: TestDatabase.logger)
                ids.append(try #require(try await credentials.sessions.claims(of: created.webAuthToken, logger: TestDatabase.logger)).sessionID)
            }
            #expect(Set(ids).count == 8)
            #expect(zip(ids, ids.dropFirst()).allSatisfy { abs($1 &- $0) != 1 }, "not consecutive: \(ids)")
            #expect(ids.allSatisfy { $0 > 1 << 32 }, "drawn from 63 bits: \(ids)")
        }
    }

    @Test func whatAProcessCachedOfTheLostHistoryIsForgotten() async throws {
        try await TestServer.run { server in
            #expect(try await server.call("zones/list", as: server.alice).status == 200)
            let credentials = server.dependencies.credentials
            #expect(credentials.cache.withLock { !$0.isEmpty })
            try await Self.fork(server)
            #expect(credentials.cache.withLock { $0.isEmpty })
        }
    }
}
