import CloudCore
import CloudHTTP
import CloudPostgres
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// Web apps (CloudKit JS in a page on another origin; docs/AUTH.md, "Web apps"): CORS for the operator's allowed
/// origins only, and the sign-in popup handing the session back to its opener. The browser's side is
/// `scripts/browser` (headless Chromium).
@Suite(.bounded) struct WebAppTests {
    static let app = "http://app.example.test"

    @Test func anAllowedOriginGetsCORSAndAnyOtherNone() async throws {
        try await TestServer.run(configure: { $0.webOrigins = [Self.app] }) { server in
            let path = "\(TestServer.base)/private/records/modify?ckAPIToken=\(server.apiToken)"
            let preflight = try await server.client.execute(
                uri: path, method: .options,
                headers: [.origin: Self.app, .accessControlRequestMethod: "POST", .accessControlRequestHeaders: "content-type"]) { $0 }
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == Self.app)
            #expect(preflight.headers[.accessControlAllowMethods]?.contains("POST") == true)
            #expect(preflight.headers[.accessControlAllowHeaders] == "content-type")
            #expect(preflight.headers[values: .vary].contains("Origin"))

            let answer = try await server.client.execute(
                uri: "\(TestServer.base)/private/zones/list?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.alice.webAuthToken)", method: .get,
                headers: [.origin: Self.app]) { $0 }
            #expect(answer.status == .ok)
            #expect(answer.headers[.accessControlAllowOrigin] == Self.app)
            #expect(answer.headers[.accessControlExposeHeaders]?.contains("X-Apple-CloudKit-Web-Auth-Token") == true)
            // A compressed answer keeps compression's Vary beside the origin's.
            try await server.modify(
                (0..<30).map { Op.create("s\($0)", type: "Stadium", ["name": .string(String(repeating: "x", count: 100))]) }, database: "public",
                signed: true)
            let gzipped = try await server.client.execute(
                uri: "\(TestServer.base)/public/records/query?ckAPIToken=\(server.apiToken)", method: .post,
                headers: [.origin: Self.app, .acceptEncoding: "gzip", .contentType: "text/plain"],
                body: ByteBuffer(string: #"{"query":{"recordType":"Stadium"}}"#)) { $0 }
            #expect(gzipped.headers[.contentEncoding] == "gzip")
            #expect(Set(gzipped.headers[values: .vary]).isSuperset(of: ["Origin", "Accept-Encoding"]), "\(gzipped.headers)")
            // Errors carry it too, or a page could not read why it failed.
            let error = try await server.client.execute(uri: "\(TestServer.base)/private/zones/list", method: .get, headers: [.origin: Self.app]) { $0 }
            #expect(error.status.code == 401 && error.headers[.accessControlAllowOrigin] == Self.app)

            for other in ["http://evil.example.test", "null", Self.app + ".evil.test"] {
                let refused = try await server.client.execute(
                    uri: path, method: .options, headers: [.origin: other, .accessControlRequestMethod: "POST"]) { $0 }
                #expect(refused.headers[.accessControlAllowOrigin] == nil, "\(other)")
                let read = try await server.client.execute(
                    uri: "\(TestServer.base)/private/zones/list?ckAPIToken=\(server.apiToken)&ckWebAuthToken=\(server.alice.webAuthToken)",
                    method: .get, headers: [.origin: other]) { $0 }
                #expect(read.headers[.accessControlAllowOrigin] == nil && read.headers[.accessControlExposeHeaders] == nil, "\(other)")
            }
        }
    }

    @Test func withoutAllowedOriginsNothingIsCrossOrigin() async throws {
        try await TestServer.run { server in
            let answer = try await server.client.execute(
                uri: "\(TestServer.base)/public/zones/list?ckAPIToken=\(server.apiToken)", method: .get, headers: [.origin: Self.app]) { $0 }
            #expect(answer.headers[.accessControlAllowOrigin] == nil)
        }
    }

    /// The popup CloudKit JS opens posts the session to its opener, once per allowed origin with that origin as the
    /// target (the browser drops the others), under a nonce no other script has.
    @Test func theSignInPageHandsTheSessionToAnAllowedOpenerOnly() async throws {
        try await TestServer.run(configure: { $0.webOrigins = [Self.app] }) { server in
            _ = try await server.dependencies.credentials.setPassword(accountName: "alice", password: "correct horse battery", logger: TestDatabase.logger)
            let page = try await AuthTests.signIn(server, "accountName=alice&password=correct+horse+battery", form: true)
            #expect(page.status == .ok)
            let html = String(buffer: page.body)
            let policy = try #require(page.headers[.contentSecurityPolicy])
            let nonce = try #require(policy.split(separator: "'nonce-").last?.split(separator: "'").first)
            #expect(html.contains("<script nonce=\(nonce)>"))
            #expect(html.contains("postMessage(m, o)") && html.contains("\"\(Self.app)\""))
            // Outside its JSON strings the script keeps its own characters (an escaped `<` there broke it in Chromium).
            let script = try #require(html.split(separator: "<script nonce=\(nonce)>").last?.split(separator: "</script>").first)
            #expect(!script.contains("\\u003c"), "\(script)")
            #expect(!html.contains("\"*\""))
            #expect(policy.contains("frame-ancestors 'none'"))
        }
        // With no allowed origin, no script at all.
        try await TestServer.run { server in
            _ = try await server.dependencies.credentials.setPassword(accountName: "alice", password: "correct horse battery", logger: TestDatabase.logger)
            let page = try await AuthTests.signIn(server, "accountName=alice&password=correct+horse+battery", form: true)
            #expect(!String(buffer: page.body).contains("<script"))
            #expect(page.headers[.contentSecurityPolicy]?.contains("script-src") == false)
        }
    }
}
