import CloudCore
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The operator console: operators only, a session cookie with a form token on every form, an idle timeout, and a
/// person's private records only as counts.
@Suite struct ConsoleTests {
    struct Page {
        var status: Int
        var html: String
        var headers: HTTPFields

        /// The form token of the page's first form.
        var formToken: String? {
            guard let start = self.html.range(of: "name=formToken value=\"") else { return nil }
            return String(self.html[start.upperBound...].prefix { $0 != "\"" })
        }

        /// `name=value` of each `Set-Cookie`.
        var cookies: [String: String] {
            var cookies: [String: String] = [:]
            for header in self.headers[values: .setCookie] {
                let pair = header.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
                cookies[String(pair[0])] = pair.count > 1 ? String(pair[1]) : ""
            }
            return cookies
        }
    }

    static func request(
        _ server: TestServer, _ path: String, form: [String: String]? = nil, cookies: [String: String] = [:]
    ) async throws -> Page {
        var headers: HTTPFields = [:]
        if !cookies.isEmpty { headers[.cookie] = cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
        var body: ByteBuffer?
        if let form {
            headers[.contentType] = "application/x-www-form-urlencoded"
            body = ByteBuffer(
                string: form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
            )
        }
        return try await server.client.execute(uri: path, method: form == nil ? .get : .post, headers: headers, body: body) { response in
            Page(status: Int(response.status.code), html: String(buffer: response.body), headers: response.headers)
        }
    }

    /// Signs in as `name`; answers the session cookie, or nil with the page that refused.
    static func signIn(_ server: TestServer, _ name: String, _ password: String) async throws -> (session: String?, page: Page) {
        let form = try await Self.request(server, "/console/signin")
        let formCookie = try #require(form.cookies["stadiumcloud_console_form"])
        let answer = try await Self.request(
            server, "/console/signin", form: ["formToken": try #require(form.formToken), "accountName": name, "password": password],
            cookies: ["stadiumcloud_console_form": formCookie])
        return (answer.cookies["stadiumcloud_console"], answer)
    }

    @Test func operatorsSignInSeeCountsNotContentsAndSignOut() async throws {
        let time = ManualClock()
        try await TestServer.run(configure: { $0.clock = time.clock }) { server in
            let credentials = server.dependencies.credentials
            let password = "correct horse battery staple"
            _ = try await credentials.createAccount(name: "ops", password: password, idleMs: 3_600_000, logger: TestDatabase.logger)
            #expect(try await credentials.setOperator(accountName: "ops", true, logger: TestDatabase.logger))
            _ = try await credentials.setPassword(accountName: "alice", password: password, logger: TestDatabase.logger)
            #expect(try await server.modify([Op.create("v1", ["note": "secret-note-xyz"])]).anyError == nil)

            // Nobody signed in: the sign-in page.
            let anonymous = try await Self.request(server, "/console")
            #expect(anonymous.status == 303 && anonymous.headers[.location] == "/console/signin")
            let form = try await Self.request(server, "/console/signin")
            #expect(form.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(form.headers[values: .setCookie].first?.contains("HttpOnly; SameSite=Strict") == true)
            // A form without its cookie (another site's), a person's account, a wrong password: refused.
            let forged = try await Self.request(
                server, "/console/signin", form: ["formToken": try #require(form.formToken), "accountName": "ops", "password": password])
            #expect(forged.status == 403)
            #expect(try await Self.signIn(server, "alice", password).session == nil)
            #expect(try await Self.signIn(server, "ops", "wrong password entirely").page.status == 401)

            let (session, answer) = try await Self.signIn(server, "ops", password)
            #expect(answer.status == 303 && answer.headers[.location] == "/console")
            let cookies = ["stadiumcloud_console": try #require(session)]
            let overview = try await Self.request(server, "/console", cookies: cookies)
            #expect(overview.status == 200 && overview.html.contains("<h1>Overview</h1>") && overview.html.contains("ready"))
            #expect(overview.html.contains("<td>private</td><td>Visit</td><td class=n>1</td>"), "\(overview.html)")
            #expect(!overview.html.contains("secret-note-xyz") && !overview.html.contains("v1"))
            let accounts = try await Self.request(server, "/console/accounts?q=ali", cookies: cookies)
            #expect(accounts.html.contains("<td>alice</td>") && !accounts.html.contains("<td>bob</td>"))

            // Signing out needs the session's form token; after it, and after 15 idle minutes, the cookie opens nothing.
            #expect(try await Self.request(server, "/console/signout", form: ["formToken": "forged"], cookies: cookies).status == 403)
            let token = try #require(overview.formToken)
            #expect(try await Self.request(server, "/console/signout", form: ["formToken": token], cookies: cookies).status == 303)
            #expect(try await Self.request(server, "/console", cookies: cookies).status == 303)
            let again = try #require(try await Self.signIn(server, "ops", password).session)
            time.advance(by: .seconds(15 * 60 + 1))
            #expect(try await Self.request(server, "/console", cookies: ["stadiumcloud_console": again]).status == 303)
        }
    }

    /// Credentials: an API token made in the console works at once and stops working when revoked there; a form
    /// without the session's form token changes nothing.
    @Test func operatorsCreateAndRevokeAPITokens() async throws {
        try await TestServer.run { server in
            let credentials = server.dependencies.credentials
            let password = "correct horse battery staple"
            _ = try await credentials.createAccount(name: "ops", password: password, idleMs: 3_600_000, logger: TestDatabase.logger)
            _ = try await credentials.setOperator(accountName: "ops", true, logger: TestDatabase.logger)
            let cookies = ["stadiumcloud_console": try #require(try await Self.signIn(server, "ops", password).session)]
            let page = try await Self.request(server, "/console/credentials", cookies: cookies)
            #expect(page.status == 200 && page.html.contains("Container API tokens"))
            let formToken = try #require(page.formToken)
            let before = try await credentials.apiTokens(logger: TestDatabase.logger).count

            let forged = try await Self.request(server, "/console/credentials", form: ["action": "create-token", "label": "x"], cookies: cookies)
            #expect(forged.status == 403)
            #expect(try await credentials.apiTokens(logger: TestDatabase.logger).count == before)

            let created = try await Self.request(
                server, "/console/credentials", form: ["formToken": formToken, "action": "create-token", "label": "kiosk"], cookies: cookies)
            let start = try #require(created.html.range(of: "<code id=new-token>"))
            let token = String(created.html[start.upperBound...].prefix { $0 != "<" })
            #expect(token.count == 64)
            #expect(try await server.call("zones/list", database: "public", apiToken: token).status == 200)

            let fingerprint = Data(SHA256.hash(data: Array(token.utf8))).prefix(8).map { String(format: "%02x", $0) }.joined()
            #expect(created.html.contains(fingerprint) && !created.html.contains("value=\"\(token)\""))
            let revoked = try await Self.request(
                server, "/console/credentials", form: ["formToken": formToken, "action": "revoke-token", "token": fingerprint], cookies: cookies)
            #expect(revoked.html.contains("API token revoked"))
            #expect(try await server.call("zones/list", database: "public", apiToken: token).status == 401)
        }
    }
}
