import CloudCore
import CloudHTTP
@testable import CloudPostgres
import Foundation
import HTTPTypes
import PostgresNIO
import Testing

/// Signed web auth tokens (docs/AUTH.md): no write per answer, the same promises as the row-per-token
/// scheme, and that scheme's tokens still working after the migration.
@Suite(.bounded) struct WebAuthTokenTests {
    static let header = HTTPField.Name("X-Apple-CloudKit-Web-Auth-Token")!

    @Test func alteredForgedAndIdleTokensAreRefused() async throws {
        let time = ManualClock()
        try await TestServer.run(configure: { $0.clock = time.clock }) { server in
            let token = server.alice.webAuthToken
            #expect(token.hasPrefix("2__1__"))
            // One character changed anywhere in the signed part, or a token signed with another key.
            var altered = Array(token)
            altered[token.count - 3] = altered[token.count - 3] == "A" ? "B" : "A"
            let forged = "2__1__" + TokenSigner(key: [UInt8](repeating: 7, count: 32)).sign([3] + [UInt8](repeating: 0, count: 28))
            for bad in [String(altered), forged, "2__1__", "2__1__!!!"] {
                let reply = try await server.call("zones/list", as: TestAccount(account: server.alice.account, webAuthToken: bad))
                #expect(reply.status == 421, "\(bad)")
            }
            // Idle for longer than the session's lifetime (an hour in tests): the token itself says when it was issued.
            time.advance(by: .seconds(3601))
            let idle = try await server.call("zones/list", as: server.alice)
            #expect(idle.status == 421)
        }
    }

    @Test func answersWriteNothingUntilTheUsesAreWrittenTogether() async throws {
        try await TestServer.run(configure: { _ in }) { server in
            var account = server.alice
            for _ in 0..<20 {
                let reply = try await server.call("zones/list", as: account)
                #expect(reply.status == 200)
                account.webAuthToken = try #require(reply.headers[Self.header])
            }
            let credentials = server.dependencies.credentials
            // The timed flush may already be writing some of them (a busy machine once had it in flight here): this
            // one writes the rest, and the rows are counted once both have committed.
            await credentials.writeTokenUses(logger: TestDatabase.logger)
            var rows = 0
            try await eventually("20 first uses written", on: credentials.sessions.usesWritten) {
                for try await count in try await credentials.client.query("SELECT count(*) FROM auth_session_uses", logger: TestDatabase.logger)
                    .decode(Int64.self)
                { rows = Int(count) }
                return rows >= 20
            }
            #expect(rows == 20, "one first use per generation, written together")
            #expect(try await server.call("zones/list", as: account).status == 200)
        }
    }

    @Test func anotherProcessCatchesACopiedToken() async throws {
        let time = ManualClock()
        try await TestServer.run(configure: {
            $0.clock = time.clock; $0.auth.rotationGraceSeconds = 1
        }) { server in
            let first = server.alice
            let second = try #require(try await server.call("zones/list", as: first).headers[Self.header])
            #expect(try await server.call("zones/list", as: TestAccount(account: first.account, webAuthToken: second)).status == 200)
            await server.dependencies.credentials.writeTokenUses(logger: TestDatabase.logger)
            // Another server process on the same database, which never saw these requests.
            let other = CredentialStore(client: server.dependencies.credentials.client, clock: time.clock, useWriteInterval: nil)
            #expect(try await other.grant(forWebAuthToken: first.webAuthToken, graceMs: 1000, logger: TestDatabase.logger) != nil, "within grace")
            time.advance(by: .milliseconds(1001))
            #expect(try await other.grant(forWebAuthToken: first.webAuthToken, graceMs: 1000, logger: TestDatabase.logger) == nil)
            #expect(try await other.grant(forWebAuthToken: second, graceMs: 1000, logger: TestDatabase.logger) == nil, "the session ended")
        }
    }

    @Test func aTokenOfTheRowPerTokenSchemeKeepsWorkingAndRotatesIntoASignedOne() async throws {
        try await TestServer.run(configure: { _ in }) { server in
            // What a device held before migration 0007: a token row, and its session as the migration copied it.
            let legacy = "1__1__" + TokenSigner.base64URL((0..<32).map { _ in UInt8.random(in: 0...255) })
            let credentials = server.dependencies.credentials
            let now = Timestamp.now
            try await credentials.client.query(
                """
                WITH session AS (INSERT INTO auth_sessions (id, account_id, idle_ms, created_ms)
                    VALUES (\(Int64.random(in: 1...Int64.max)), \(server.bob.account.id), 3600000, \(now)) RETURNING id)
                INSERT INTO credentials (token_hash, kind, account_id, session_id, idle_ms, expires_ms, created_ms)
                SELECT \(CredentialStore.hash(legacy)), 'web_auth', \(server.bob.account.id), id, 3600000, \(now + 3_600_000), \(now) FROM session
                """, logger: TestDatabase.logger)
            let reply = try await server.call("zones/list", as: TestAccount(account: server.bob.account, webAuthToken: legacy))
            #expect(reply.status == 200)
            let next = try #require(reply.headers[Self.header])
            #expect(next.hasPrefix("2__1__"))
            #expect(try await server.call("zones/list", as: TestAccount(account: server.bob.account, webAuthToken: next)).status == 200)
            // Signing out with the signed token ends the old token too: it is one session.
            #expect(try await credentials.revoke(token: next, logger: TestDatabase.logger))
            #expect(try await server.call("zones/list", as: TestAccount(account: server.bob.account, webAuthToken: legacy)).status == 421)
        }
    }
}
