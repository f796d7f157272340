import CloudCore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// `Idempotency-Key` on `records/modify`: a retry after a lost answer gets the first answer, and the batch is
/// applied once.
@Suite(.bounded) struct IdempotencyTests {
    static func modify(_ server: TestServer, _ body: JSONValue, key: String?, as account: TestAccount? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let key { headers[HTTPField.Name("Idempotency-Key")!] = key }
        let account = account ?? server.alice
        return try await server.client.execute(
            uri: "\(TestServer.base)/private/records/modify?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(account.webAuthToken)",
            method: .post, headers: headers, body: ByteBuffer(string: JSONWriter.encode(body))
        ) { $0 }
    }

    @Test func aRetriedCreateGetsTheFirstAnswerAndWritesOnce() async throws {
        try await TestServer.run { server in
            let batch: JSONValue = ["operations": [Op.create("v1", ["note": "first"]), Op.create("v2", ["note": "second"])]]
            let first = try await Self.modify(server, batch, key: "batch-1")
            #expect(first.status == .ok)
            let retry = try await Self.modify(server, batch, key: "batch-1")
            #expect(retry.status == .ok)
            #expect(String(buffer: retry.body) == String(buffer: first.body))
            // Without a key the same retry is a second create: EXISTS, as CloudKit answers.
            let unkeyed = try await Self.modify(server, batch, key: nil)
            #expect(try JSONValue.parse(unkeyed.body.readableBytesView)["records"]?[0]?["serverErrorCode"] == "EXISTS")
            let changes = try await server.pull()
            #expect(changes.records.count == 2)
        }
    }

    /// The upsert stores the answer it expects; a create that meets a live record must replace it with the EXISTS one.
    @Test func aKeyedCreateThatMeetsALiveRecordKeepsTheExistsAnswer() async throws {
        try await TestServer.run { server in
            #expect(try await Self.modify(server, ["operations": [Op.create("taken")]], key: nil).status == .ok)
            let batch: JSONValue = ["operations": [Op.create("taken", ["note": "again"]), Op.create("free")]]
            let first = try await Self.modify(server, batch, key: "meets-live")
            let answer = try JSONValue.parse(first.body.readableBytesView)
            #expect(answer["records"]?[0]?["serverErrorCode"] == "EXISTS")
            #expect(answer["records"]?[1]?["recordName"] == "free")
            let retry = try await Self.modify(server, batch, key: "meets-live")
            #expect(String(buffer: retry.body) == String(buffer: first.body), "the retry gets the EXISTS answer, not the expected one")
        }
    }

    @Test func concurrentRetriesApplyOnceAndAllGetTheSameAnswer() async throws {
        try await TestServer.run { server in
            try await server.modify([Op.create("counter", ["n": 0])])
            let tag = try #require(
                try await server.call("records/lookup", ["records": [["recordName": "counter"]]], as: server.alice).records.first?["recordChangeTag"])
            let update: JSONValue = [
                "operations": [
                    ["operationType": "update", "record": ["recordName": "counter", "recordChangeTag": tag, "fields": ["n": ["value": 1]]]]
                ]
            ]
            let answers = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<6 { group.addTask { String(buffer: try await Self.modify(server, update, key: "bump").body) } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            // One of them applied the update; every other one got that same answer, not a CONFLICT.
            #expect(Set(answers).count == 1, "\(Set(answers))")
            #expect(!answers[0].contains("CONFLICT"))
            let changes = try await server.pull()
            #expect(changes.records.count == 1)
            #expect(changes.records.first?["fields"]?["n"]?["value"] == 1)
        }
    }

    @Test func aKeyReusedForAnotherRequestIsRefusedAndKeysArePerAccount() async throws {
        try await TestServer.run { server in
            #expect(try await Self.modify(server, ["operations": [Op.create("a")]], key: "k").status == .ok)
            let other = try await Self.modify(server, ["operations": [Op.create("b")]], key: "k")
            #expect(other.status == .badRequest)
            #expect(String(buffer: other.body).contains("already used for a different request"))
            // Bob's "k" is his own.
            #expect(try await Self.modify(server, ["operations": [Op.create("b")]], key: "k", as: server.bob).status == .ok)
            let long = try await Self.modify(server, ["operations": [Op.create("c")]], key: String(repeating: "x", count: 300))
            #expect(long.status == .badRequest)
        }
    }
}
