import CloudCore
import Testing

@Suite struct AuthTests {
    @Test func apiTokenIsRequiredAndChecked() async throws {
        try await TestServer.run { server in
            let missing = try await server.client.execute(uri: "\(TestServer.base)/public/zones/list", method: .get) { $0 }
            #expect(missing.status.code == 401)
            let wrong = try await server.call("zones/list", database: "public", apiToken: String(repeating: "0", count: 64))
            #expect(wrong.status == 401)
            #expect(wrong.errorCode == "AUTHENTICATION_FAILED")
        }
    }

    @Test func privateDatabaseNeedsAUserAndSaysWhereToSignIn() async throws {
        try await TestServer.run { server in
            let reply = try await server.call("zones/list", database: "private")
            #expect(reply.status == 421)
            #expect(reply.errorCode == "AUTHENTICATION_REQUIRED")
            #expect(reply.json["redirectURL"] != nil)
            let badSession = try await server.call("zones/list", database: "private", as: TestAccount(account: server.alice.account, webAuthToken: "not-a-token"))
            #expect(badSession.status == 421)
            let users = try await server.call("users/current", database: "public", as: server.alice)
            #expect(users.json["userRecordName"]?.stringValue == server.alice.account.userRecordName)
            #expect(users.headers[.init("X-Apple-CloudKit-Web-Auth-Token")!] == server.alice.webAuthToken)
            let caller = try await server.call("users/caller", database: "private", as: server.bob)
            #expect(caller.json["users"]?[0]?["userRecordName"]?.stringValue == server.bob.account.userRecordName)
        }
    }

    @Test func publicDatabaseIsReadableByAnyTokenButWritableOnlyByOperators() async throws {
        try await TestServer.run { server in
            let denied = try await server.modify([Op.create("s", type: "Stadium")], database: "public")
            #expect(denied.status == 403)
            #expect(denied.errorCode == "ACCESS_DENIED")
            let asUser = try await server.modify([Op.create("s", type: "Stadium")], database: "public", as: server.alice)
            #expect(asUser.status == 403)
            let allowed = try await server.modify([Op.create("s", type: "Stadium")], database: "public", apiToken: server.operatorToken)
            #expect(allowed.status == 200)
            let read = try await server.call("records/lookup", ["records": [["recordName": "s"]]], database: "public")
            #expect(read.records.first?["recordName"] == "s")
            let zones = try await server.call("zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]], database: "public", apiToken: server.operatorToken)
            #expect(zones.errorCode == "BAD_REQUEST")
        }
    }

    @Test func accountsNeverSeeEachOthersData() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("secret", ["note": "alice only"])], as: server.alice)
            let lookup = try await server.call("records/lookup", ["records": [["recordName": "secret"]]], as: server.bob)
            #expect(lookup.records.first?["serverErrorCode"] == "NOT_FOUND")
            let query = try await server.call("records/query", ["query": ["recordType": "Visit"]], as: server.bob)
            #expect(query.records.isEmpty)
            let changes = try await ChangesTests.pull(server, as: server.bob)
            #expect(changes.records.isEmpty)
            // Bob writing the same name creates his own record; Alice's is untouched.
            let bobs = try await server.modify([Op.typed("forceUpdate", "secret", type: "Visit", fields: ["note": ["value": "bob"]])], as: server.bob)
            #expect(bobs.status == 200)
            let aliceView = try await server.call("records/lookup", ["records": [["recordName": "secret"]]], as: server.alice)
            #expect(aliceView.records.first?["fields"]?["note"]?["value"] == "alice only")
            let otherOwner = try await server.call(
                "records/lookup", ["zoneID": ["zoneName": "_defaultZone", "ownerRecordName": .string(server.alice.account.userRecordName)], "records": [["recordName": "secret"]]],
                as: server.bob)
            #expect(otherOwner.errorCode == "ZONE_NOT_FOUND")
        }
    }

    @Test func revokedTokensStopWorking() async throws {
        try await TestServer.run { server in
            let credentials = server.dependencies.credentials
            let token = try await credentials.createAPIToken(role: .client, label: nil, logger: TestDatabase.logger)
            #expect(try await server.call("zones/list", database: "public", apiToken: token).status == 200)
            #expect(try await credentials.revoke(token: token, logger: TestDatabase.logger))
            #expect(try await server.call("zones/list", database: "public", apiToken: token).status == 401)
        }
    }
}
