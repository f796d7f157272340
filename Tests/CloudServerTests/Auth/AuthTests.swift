import CloudCore
import CloudHTTP
import CloudPostgres
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Synchronization
import Testing

@Suite(.bounded) struct AuthTests {
    static let webAuthHeader = HTTPField.Name("X-Apple-CloudKit-Web-Auth-Token")!

    @Test func apiTokenIsRequiredAndChecked() async throws {
        try await TestServer.run { server in
            let missing = try await server.client.execute(uri: "\(TestServer.base)/public/zones/list", method: .get) { $0 }
            #expect(missing.status.code == 401)
            let wrong = try await server.call("zones/list", database: "public", apiToken: String(repeating: "0", count: 64))
            #expect(wrong.status == 401)
            #expect(wrong.errorCode == "AUTHENTICATION_FAILED")
            let otherContainer = try await server.client.execute(
                uri: "/database/1/iCloud.com.elsewhere/development/public/zones/list?ckAPIToken=\(server.apiToken)", method: .get
            ) { $0 }
            #expect(otherContainer.status.code == 404)
        }
    }

    @Test func privateDatabaseNeedsAUserAndSaysWhereToSignIn() async throws {
        try await TestServer.run { server in
            let reply = try await server.call("zones/list", database: "private")
            #expect(reply.status == 421)
            #expect(reply.errorCode == "AUTHENTICATION_REQUIRED")
            let redirect = try #require(reply.json["redirectURL"]?.stringValue)
            #expect(redirect.hasPrefix("http") && redirect.hasSuffix("/signin"))
            let page = try await server.client.execute(uri: "/signin", method: .get) { $0 }
            #expect(page.status == .ok)
            #expect(page.headers[.contentType]?.hasPrefix("text/html") == true)
            #expect(String(buffer: page.body).contains("<form method=post"))
            let badSession = try await server.call(
                "zones/list", database: "private", as: TestAccount(account: server.alice.account, webAuthToken: "not-a-token"))
            #expect(badSession.status == 421)
            let users = try await server.call("users/current", database: "public", as: server.alice)
            #expect(users.json["userRecordName"]?.stringValue == server.alice.account.userRecordName)
            let caller = try await server.call("users/caller", database: "private", as: server.bob)
            #expect(caller.json["users"]?[0]?["userRecordName"]?.stringValue == server.bob.account.userRecordName)
        }
    }

    @Test func webAuthTokensRotateAndARetiredTokenExpiresAfterTheGracePeriod() async throws {
        let time = ManualClock()
        try await TestServer.run(configure: {
            $0.auth.rotationGraceSeconds = 1; $0.clock = time.clock
        }) { server in
            let first = server.alice
            let reply1 = try await server.call("zones/list", as: first)
            let second = try #require(reply1.headers[Self.webAuthHeader])
            #expect(second != first.webAuthToken)
            // Until the new token is used the old one stays valid: the answer carrying it may have been lost.
            let again = try await server.call("zones/list", as: first)
            #expect(again.status == 200)
            let reply2 = try await server.call("zones/list", as: TestAccount(account: first.account, webAuthToken: second))
            let third = try #require(reply2.headers[Self.webAuthHeader])
            // Using the second token retired the first: still good within the grace period…
            #expect(try await server.call("zones/list", as: first).status == 200)
            time.advance(by: .milliseconds(1001))
            // …and afterwards its use means someone else holds a copy: the whole session ends.
            let stale = try await server.call("zones/list", as: first)
            #expect(stale.status == 421)
            #expect(try await server.call("zones/list", as: TestAccount(account: first.account, webAuthToken: third)).status == 421)
            // Bob's session is not affected.
            #expect(try await server.call("zones/list", as: server.bob).status == 200)
        }
    }

    @Test func errorsCarryNoNewTokenAndLeaveTheOldOneValid() async throws {
        try await TestServer.run { server in
            let failed = try await server.call("records/modify", ["operations": "not a list"], as: server.alice)
            #expect(failed.status == 400)
            #expect(failed.headers[Self.webAuthHeader] == nil)
            #expect(try await server.call("zones/list", as: server.alice).status == 200)
        }
    }

    @Test func passwordSignInJSONFormAndCallback() async throws {
        try await TestServer.run(configure: { $0.auth.signInCallbackPrefixes = ["sportstime://signin"] }) { server in
            let logger = TestDatabase.logger
            #expect(try await server.dependencies.credentials.setPassword(accountName: "alice", password: "correct horse battery", logger: logger))
            await #expect(throws: CloudError.self) {
                try await server.dependencies.credentials.setPassword(accountName: "alice", password: "short", logger: logger)
            }
            let json = try await Self.signIn(server, #"{"accountName":"alice","password":"correct horse battery","keepSignedIn":true}"#)
            #expect(json.status == .ok)
            let body = try JSONValue.parse(json.body.readableBytesView)
            #expect(body["expiresInSeconds"] == .int(14 * 24 * 3600))
            let token = try #require(body["ckWebAuthToken"]?.stringValue)
            #expect(try await server.call("zones/list", as: TestAccount(account: server.alice.account, webAuthToken: token)).status == 200)

            // A wrong password and an unknown account get the same answer.
            let wrong = try await Self.signIn(server, #"{"accountName":"alice","password":"wrong horse battery"}"#)
            let unknown = try await Self.signIn(server, #"{"accountName":"mallory","password":"wrong horse battery"}"#)
            #expect(wrong.status.code == 401 && unknown.status.code == 401)
            #expect(try JSONValue.parse(wrong.body.readableBytesView)["reason"] == JSONValue.parse(unknown.body.readableBytesView)["reason"])
            let noPassword = try await Self.signIn(server, #"{"accountName":"bob","password":"anything at all"}"#)
            #expect(noPassword.status.code == 401)

            // A form post with an allowed callback is sent there with the token; other callbacks are refused.
            let form = try await Self.signIn(
                server, "accountName=alice&password=correct+horse+battery&callback=sportstime%3A%2F%2Fsignin%3Fstate%3D1", form: true)
            #expect(form.status == .seeOther)
            let location = try #require(form.headers[.location])
            #expect(location.hasPrefix("sportstime://signin?state=1&ckWebAuthToken="))
            let evil = try await Self.signIn(
                server, "accountName=alice&password=correct+horse+battery&callback=https%3A%2F%2Fevil.example", form: true)
            #expect(evil.status.code == 400)
            let evilPage = try await server.client.execute(uri: "/signin?callback=https://evil.example", method: .get) { $0 }
            #expect(evilPage.status.code == 400)
            let badForm = try await Self.signIn(server, "accountName=alice&password=nope+nope+nope", form: true)
            #expect(badForm.status.code == 401)
            #expect(String(buffer: badForm.body).contains("wrong account name or password"))

            // Signing out ends the session.
            let signout = try await server.client.execute(uri: "/signout?ckWebAuthToken=\(token)", method: .post) { $0 }
            #expect(signout.status == .ok)
            #expect(try await server.call("zones/list", as: TestAccount(account: server.alice.account, webAuthToken: token)).status == 421)
        }
    }

    @Test func signInAttemptsAreThrottledPerAccount() async throws {
        try await TestServer.run(configure: { $0.rateLimits.signInPerAccount = RateLimit(perSecond: 0.01, burst: 2) }) { server in
            for _ in 0..<2 {
                #expect(try await Self.signIn(server, #"{"accountName":"alice","password":"guess guess guess"}"#).status.code == 401)
            }
            let throttled = try await Self.signIn(server, #"{"accountName":"alice","password":"guess guess guess"}"#)
            #expect(throttled.status.code == 503)
            let body = try JSONValue.parse(throttled.body.readableBytesView)
            #expect(body["serverErrorCode"] == "THROTTLED")
            #expect((body["retryAfter"]?.int64Value ?? 0) >= 1)
            #expect(throttled.headers[.retryAfter] != nil)
            // Another account's sign-in is not affected.
            #expect(try await Self.signIn(server, #"{"accountName":"bob","password":"guess guess guess"}"#).status.code == 401)
        }
    }

    @Test func requestsAreThrottledPerAccountAndPerToken() async throws {
        try await TestServer.run(configure: {
            $0.rateLimits.perAccount = RateLimit(perSecond: 0.01, burst: 3)
            $0.rateLimits.perAPIToken = RateLimit(perSecond: 0.01, burst: 5)
        }) { server in
            for _ in 0..<3 { #expect(try await server.call("zones/list", as: server.alice).status == 200) }
            let throttled = try await server.call("zones/list", as: server.alice)
            #expect(throttled.status == 503)
            #expect(throttled.errorCode == "THROTTLED")
            #expect((throttled.json["retryAfter"]?.int64Value ?? 0) >= 1)
            // Bob has his own budget, until the shared API token's runs out (the throttled request counted against it too).
            #expect(try await server.call("zones/list", as: server.bob).status == 200)
            #expect(try await server.call("zones/list", as: server.bob).status == 503)
        }
    }

    @Test func publicDatabaseWritesNeedAServerToServerKey() async throws {
        try await TestServer.run { server in
            let denied = try await server.modify([Op.create("s", type: "Stadium")], database: "public")
            #expect(denied.status == 403)
            #expect(denied.errorCode == "ACCESS_DENIED")
            // A person passes the door but not the record type's permissions: canonical types are the operators'.
            let asUser = try await server.modify([Op.create("s", type: "Stadium")], database: "public", as: server.alice)
            #expect(asUser.anyErrorCode == "ACCESS_DENIED")
            let allowed = try await server.modify([Op.create("s", type: "Stadium")], database: "public", signed: true)
            #expect(allowed.status == 200)
            let read = try await server.call("records/lookup", ["records": [["recordName": "s"]]], database: "public")
            #expect(read.records.first?["recordName"] == "s")
            let zones = try await server.call(
                "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]], database: "public", signed: true
            )
            // Only unlisted zones are created in the public database (UnlistedZone), by operators and people alike.
            #expect(zones.json["zones"]?[0]?["serverErrorCode"] == "ACCESS_DENIED")
            let privateDatabase = try await server.call("zones/list", database: "private", signed: true)
            #expect(privateDatabase.status == 403)
        }
    }

    /// The variations of the reference's §2b that real clients sign, and what must be refused.
    @Test func serverToServerSignaturesAcceptClientVariationsAndRefuseReplays() async throws {
        try await TestServer.run { server in
            let path = "\(TestServer.base)/public/zones/list"
            func get(_ uri: String, _ headers: [String: String]) async throws -> Int {
                var fields = HTTPFields()
                for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
                return try await server.client.execute(uri: uri, method: .get, headers: fields) { Int($0.status.code) }
            }
            let key = server.serverKey
            let id = server.serverKeyID
            // GET with the empty hash as "" (MistKit) and as base64(sha256("")) (requests-cloudkit).
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path, bodyHash: "")) == 200)
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path)) == 200)
            // The query signed as part of the path, or not.
            let withQuery = path + "?x=1"
            #expect(try await get(withQuery, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: withQuery)) == 200)
            #expect(try await get(withQuery, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path)) == 200)
            // Dates: 9 minutes off either way pass; 11 minutes fail.
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path, date: Date() - 540)) == 200)
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path, date: Date() + 540)) == 200)
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path, date: Date() - 660)) == 401)
            // A replay of an accepted request is refused.
            let headers = TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path, date: Date() - 1)
            #expect(try await get(path, headers) == 200)
            #expect(try await get(path, headers) == 401)
            // Another key, another path, a tampered signature, an unknown key id, mixing with ckAPIToken.
            let stranger = P256.Signing.PrivateKey()
            #expect(try await get(path, TestServer.signatureHeaders(key: stranger, keyID: id, body: [], path: path)) == 401)
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: "/database/1/other")) == 401)
            var tampered = TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path)
            tampered["X-Apple-CloudKit-Request-SignatureV1"] = "AAAA"
            #expect(try await get(path, tampered) == 401)
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: String(repeating: "a", count: 64), body: [], path: path)) == 401)
            #expect(
                try await get(path + "?ckAPIToken=\(server.apiToken)", TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path)) == 401)
            // A POST body is covered by the signature.
            let body = Array(#"{"records":[{"recordName":"x"}]}"#.utf8)
            let lookup = "\(TestServer.base)/public/records/lookup"
            var fields = HTTPFields()
            for (name, value) in TestServer.signatureHeaders(key: key, keyID: id, body: Array(#"{"records":[]}"#.utf8), path: lookup) {
                fields[HTTPField.Name(name)!] = value
            }
            let forged = try await server.client.execute(uri: lookup, method: .post, headers: fields, body: ByteBuffer(bytes: body)) {
                $0.status.code
            }
            #expect(forged == 401)
            // A revoked key stops working.
            #expect(try await server.dependencies.credentials.revokeServerKey(id: id, logger: TestDatabase.logger))
            #expect(try await get(path, TestServer.signatureHeaders(key: key, keyID: id, body: [], path: path)) == 401)
        }
    }

    @Test func revokedTokensStopWorking() async throws {
        try await TestServer.run { server in
            let credentials = server.dependencies.credentials
            let token = try await credentials.createAPIToken(label: nil, logger: TestDatabase.logger)
            #expect(try await server.call("zones/list", database: "public", apiToken: token).status == 200)
            #expect(try await credentials.revoke(token: token, logger: TestDatabase.logger))
            #expect(try await server.call("zones/list", database: "public", apiToken: token).status == 401)
            // Revoking a web auth token ends its session.
            #expect(try await credentials.revoke(token: server.bob.webAuthToken, logger: TestDatabase.logger))
            #expect(try await server.call("zones/list", as: server.bob).status == 421)
        }
    }

    @Test func secretsNeverReachTheLogs() async throws {
        let capture = LogCapture()
        let logger = Logger(label: "capture") { _ in capture }
        try await TestServer.run(logger: logger) { server in
            try await server.dependencies.credentials.setPassword(accountName: "alice", password: "correct horse battery", logger: logger)
            let signIn = try await Self.signIn(server, #"{"accountName":"alice","password":"correct horse battery"}"#)
            let token = try #require(try JSONValue.parse(signIn.body.readableBytesView)["ckWebAuthToken"]?.stringValue)
            _ = try await Self.signIn(server, #"{"accountName":"alice","password":"wrong horse battery"}"#)
            try await server.modify([Op.create("v1")], as: server.alice)
            try await server.call("zones/list", as: TestAccount(account: server.alice.account, webAuthToken: token))
            try await server.call("zones/list", database: "public", signed: true)
            try await server.call("zones/list", database: "public", apiToken: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
            let text = capture.text
            #expect(!text.isEmpty)
            for secret in [
                server.apiToken, server.alice.webAuthToken, token, "correct horse battery", "wrong horse battery",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            ] {
                #expect(!text.contains(secret), "a secret reached the log")
            }
        }
    }

    static func signIn(_ server: TestServer, _ body: String, form: Bool = false) async throws -> TestResponse {
        try await server.client.execute(
            uri: "/signin", method: .post,
            headers: [.contentType: form ? "application/x-www-form-urlencoded" : "application/json"],
            body: ByteBuffer(string: body)
        ) { $0 }
    }
}
