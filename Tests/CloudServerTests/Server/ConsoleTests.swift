import Canon
import CloudCore
@testable import CloudHTTP
import CloudPostgres
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The operator console: operators only, a session cookie with a form token on every form, an idle timeout, and a
/// person's private records only as counts.
@Suite(.bounded) struct ConsoleTests {
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

    /// Regression: long polls counted in the "changes" family, whose p99 then said 5.5 s: how long nothing changed.
    @Test func longPollsAreTheirOwnFamily() {
        let base = "/database/1/iCloud.com.sportstime.app/production/private/"
        #expect(RequestStatistics.family(ofPath: base + "changes/wait") == "waits")
        #expect(RequestStatistics.family(ofPath: base + "changes/wait?ckAPIToken=x") == "waits")
        #expect(RequestStatistics.family(ofPath: base + "changes/zone") == "changes")
        #expect(RequestStatistics.family(ofPath: base + "records/modify") == "records")
        #expect(RequestStatistics.family(ofPath: "/webcourier/aps?ckAPIToken=x") == "courier")
    }

    /// Regression: a throttled sign-in answered the API's JSON error to the browser.
    @Test func aThrottledSignInGetsThePageAgainSayingWhenToRetry() async throws {
        try await TestServer.run(configure: { $0.rateLimits.signInPerAccount = RateLimit(perSecond: 0.1, burst: 1) }) { server in
            #expect(try await Self.signIn(server, "ops", "wrong password entirely").page.status == 401)
            let throttled = try await Self.signIn(server, "ops", "wrong password entirely").page
            #expect(throttled.status == 429 && throttled.headers[.retryAfter] == "10")
            #expect(throttled.html.contains("Too many sign-in attempts. Try again in 10 seconds.") && throttled.html.contains("<form"))
        }
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

    static let password = "correct horse battery staple"

    /// Makes the operator `ops` and signs in; answers the session cookie.
    static func signedInOperator(_ server: TestServer) async throws -> [String: String] {
        let credentials = server.dependencies.credentials
        _ = try await credentials.createAccount(name: "ops", password: Self.password, idleMs: 3_600_000, logger: TestDatabase.logger)
        _ = try await credentials.setOperator(accountName: "ops", true, logger: TestDatabase.logger)
        return ["stadiumcloud_console": try #require(try await Self.signIn(server, "ops", Self.password).session)]
    }

    /// The import page once no import runs (bounded: an import of the test dataset takes about a second).
    static func finishedImport(_ server: TestServer, _ cookies: [String: String]) async throws -> Page {
        var page: Page?
        try await eventually("the console's import to end", on: server.configuration.signals.consoleImport) {
            page = try await Self.request(server, "/console/import", cookies: cookies)
            return page?.html.contains("<progress id=progress") == false
        }
        return page!
    }

    static func field(_ server: TestServer, _ recordName: String, _ field: String) async throws -> FieldValue? {
        try await server.dependencies.records.publicRecord(
            in: TestServer.development, zone: defaultZoneName, recordName: recordName, logger: TestDatabase.logger)?.record.fields[field]
    }

    /// Public data: find Oracle Park with its aliases, rename it through the merge (previewed, then applied; the
    /// old name's alias is dated), refused edits change nothing, the change log shows the edit, and a dataset
    /// folder is imported after a dry run that wrote nothing.
    @Test func operatorsFindEditAndImportPublicData() async throws {
        try await TestServer.runImported(try CanonicalFixtures.dataset.get()) { server in
            let cookies = try await Self.signedInOperator(server)
            let oracle = "stadium_mlb_oracle_park"
            let found = try await Self.request(server, "/console/public?type=Stadium&q=oracle", cookies: cookies)
            #expect(found.status == 200 && found.html.contains(oracle) && found.html.contains("<td>Oracle Park</td>"))
            // The text is searched for as it is: "%" is not a wildcard.
            #expect(!(try await Self.request(server, "/console/public?q=%25", cookies: cookies).html.contains(oracle)))
            let page = try await Self.request(server, "/console/public/record?zone=_defaultZone&name=\(oracle)", cookies: cookies)
            #expect(page.html.contains("Pacific Bell Park") && page.html.contains("stadium_alias_mlb_oracle_park_4"))
            let formToken = try #require(page.formToken)

            var edit = [
                "container": "iCloud.com.sportstime.test", "environment": "development", "zone": defaultZoneName, "name": oracle, "field": "name",
                "value": "Test Bay Ballpark", "action": "apply",
            ]
            #expect(try await Self.request(server, "/console/public/edit", form: edit, cookies: cookies).status == 403)
            edit["formToken"] = formToken
            edit["action"] = "preview"
            let preview = try await Self.request(server, "/console/public/edit", form: edit, cookies: cookies)
            #expect(preview.html.contains("~ Stadium \(oracle): name"), "\(preview.html)")
            #expect(preview.html.contains("~ StadiumAlias stadium_alias_mlb_oracle_park_4: validUntil"))
            #expect(try await Self.field(server, oracle, "name") == FieldValue(type: .string, value: .string("Oracle Park")))
            let markup = try await Self.request(
                server, "/console/public/edit", form: edit.merging(["field": "city", "value": "<i>SF</i> & Co"]) { $1 }, cookies: cookies)
            #expect(markup.html.contains("&lt;i&gt;SF&lt;/i&gt; &amp; Co") && !markup.html.contains("<i>SF"))
            edit["action"] = "apply"
            let applied = try await Self.request(server, "/console/public/edit", form: edit, cookies: cookies)
            #expect(applied.html.contains("Applied:"))
            #expect(try await Self.field(server, oracle, "name") == FieldValue(type: .string, value: .string("Test Bay Ballpark")))
            #expect(try await Self.field(server, "stadium_alias_mlb_oracle_park_4", "validUntil") != nil)

            for (field, value, reason) in [("canonicalId", "x", "not a system field"), ("capacity", "many", "whole number")] {
                let refused = try await Self.request(
                    server, "/console/public/edit", form: edit.merging(["field": field, "value": value]) { $1 }, cookies: cookies)
                #expect(refused.html.contains("Refused") && refused.html.contains(reason), "\(field)")
            }
            #expect(try await Self.field(server, oracle, "capacity") == FieldValue(type: .int64, value: .int(41_331)))
            let log = try await Self.request(server, "/console/public/changes", cookies: cookies)
            #expect(log.html.contains("console ops") && log.html.contains(oracle))

            // A dataset folder where Oracle Park has 41,000 seats (and its own name again).
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("console-import-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let source = CanonicalFixtures.root.appendingPathComponent("Resources/canonical")
            for file in try FileManager.default.contentsOfDirectory(atPath: source.path) where file.hasSuffix(".json") {
                var text = try String(contentsOf: source.appendingPathComponent(file), encoding: .utf8)
                if file == "stadiums.json" {
                    text = text.replacingOccurrences(of: "\"capacity\": 41331", with: "\"capacity\": 41000")
                }
                try text.write(to: folder.appendingPathComponent(file), atomically: true, encoding: .utf8)
            }
            var form = ["formToken": formToken, "action": "dry-run", "path": folder.path, "environment": "development"]
            #expect(try await Self.request(server, "/console/import", form: form, cookies: cookies).status == 303)
            let dryRun = try await Self.finishedImport(server, cookies)
            #expect(dryRun.html.contains("~ Stadium \(oracle): capacity, name") && dryRun.html.contains("wrote nothing"), "\(dryRun.html)")
            #expect(dryRun.html.contains("keeps the old name &quot;Test Bay Ballpark&quot;"))
            #expect(try await Self.field(server, oracle, "capacity") == FieldValue(type: .int64, value: .int(41_331)))
            form["action"] = "apply"
            #expect(try await Self.request(server, "/console/import", form: form, cookies: cookies).status == 303)
            #expect(try await Self.finishedImport(server, cookies).html.contains("Applied"))
            #expect(try await Self.field(server, oracle, "capacity") == FieldValue(type: .int64, value: .int(41_000)))

            // The same folder uploaded from the browser: its files named folder/…, the form token in the body.
            func upload(_ files: [(String, String)], formToken: String?) async throws -> Page {
                let boundary = "console-test-\(UUID().uuidString)"
                var body = ""
                if let formToken {
                    body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"formToken\"\r\n\r\n\(formToken)\r\n"
                }
                for (name, text) in files {
                    body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"dataset\"; filename=\"\(name)\"\r\n"
                    body += "Content-Type: application/json\r\n\r\n\(text)\r\n"
                }
                body += "--\(boundary)--\r\n"
                let headers: HTTPFields = [
                    .contentType: "multipart/form-data; boundary=\(boundary)",
                    .cookie: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "),
                ]
                return try await server.client.execute(uri: "/console/import/upload", method: .post, headers: headers, body: ByteBuffer(string: body))
                {
                    Page(status: Int($0.status.code), html: String(buffer: $0.body), headers: $0.headers)
                }
            }
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map { file in
                (
                    "dataset/" + file,
                    try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8).replacingOccurrences(
                        of: "\"capacity\": 41000", with: "\"capacity\": 42000")
                )
            }
            #expect(try await upload(files, formToken: nil).status == 403)
            #expect(try await upload([("dataset/../escape.json", "[]")], formToken: formToken).status == 403)
            #expect(try await upload(files, formToken: formToken).status == 303)
            let uploaded = try await Self.finishedImport(server, cookies)
            #expect(uploaded.html.contains("~ Stadium \(oracle): capacity") && uploaded.html.contains("wrote nothing"), "\(uploaded.html)")
            #expect(try await Self.field(server, oracle, "capacity") == FieldValue(type: .int64, value: .int(41_000)))

            form["path"] = folder.path + "/missing"
            _ = try await Self.request(server, "/console/import", form: form, cookies: cookies)
            let refused = try await Self.finishedImport(server, cookies)
            #expect(refused.html.contains("Refused, nothing was written") && refused.html.contains("cannot read"))
        }
    }

    /// Accounts: created in the console (password rules hold), a password set, every session of a person ended.
    @Test func operatorsCreateAccountsSetPasswordsAndEndSessions() async throws {
        try await TestServer.run { server in
            let cookies = try await Self.signedInOperator(server)
            let formToken = try #require(try await Self.request(server, "/console/accounts", cookies: cookies).formToken)
            let short = try await Self.request(
                server, "/console/accounts", form: ["formToken": formToken, "action": "create", "name": "carol", "password": "short"],
                cookies: cookies)
            #expect(short.html.contains("class=error") && !short.html.contains("<td>carol</td>"))
            let created = try await Self.request(
                server, "/console/accounts", form: ["formToken": formToken, "action": "create", "name": "carol", "password": Self.password],
                cookies: cookies)
            #expect(created.html.contains("Account carol created") && created.html.contains("<td>carol</td>"))
            let again = try await Self.request(
                server, "/console/accounts", form: ["formToken": formToken, "action": "create", "name": "carol", "password": Self.password],
                cookies: cookies)
            #expect(again.html.contains("already exists"))

            #expect(try await server.call("users/caller", as: server.alice).status == 200)
            let ended = try await Self.request(
                server, "/console/accounts", form: ["formToken": formToken, "action": "end-sessions", "name": "alice"], cookies: cookies)
            #expect(ended.html.contains("1 session(s) of alice ended"), "\(ended.html)")
            #expect(try await server.call("users/caller", as: server.alice).status == 421)
            let password = try await Self.request(
                server, "/console/accounts", form: ["formToken": formToken, "action": "password", "name": "alice", "password": Self.password],
                cookies: cookies)
            #expect(password.html.contains("The password of alice is set"))
            #expect(
                try await server.dependencies.credentials.signIn(
                    accountName: "alice", password: Self.password, idleMs: 60_000, logger: TestDatabase.logger) != nil)
        }
    }

    /// Erasing an account from the console needs its name typed again; the operator's own account is never erased.
    @Test func operatorsEraseAnAccountOnceTheyTypeItsName() async throws {
        try await TestServer.run { server in
            let cookies = try await Self.signedInOperator(server)
            let formToken = try #require(try await Self.request(server, "/console/accounts", cookies: cookies).formToken)
            try await server.modify([Op.create("bob-visit", ["note": "Fenway"])], as: server.bob)
            func erase(_ name: String, confirm: String) async throws -> Page {
                try await Self.request(
                    server, "/console/accounts", form: ["formToken": formToken, "action": "erase", "name": name, "confirm": confirm], cookies: cookies)
            }
            let unconfirmed = try await erase("bob", confirm: "bo")
            #expect(unconfirmed.html.contains("nothing was erased"))
            #expect(try await server.call("users/caller", as: server.bob).status == 200)
            let own = try await erase("ops", confirm: "ops")
            #expect(own.html.contains("another operator erases this account"), "\(own.html)")
            let erased = try await erase("bob", confirm: "bob")
            #expect(erased.html.contains("bob erased: 1 database(s), 1 record(s)"), "\(erased.html)")
            #expect(try await server.call("users/caller", as: server.bob).status == 421)
            #expect(try await erase("bob", confirm: "bob").html.contains("No account is named bob"))
        }
    }

    /// The Export button downloads the account's archive (docs/PRIVACY.md, "Export"), which checks out.
    @Test func operatorsExportAnAccount() async throws {
        try await TestServer.run { server in
            let cookies = try await Self.signedInOperator(server)
            let formToken = try #require(try await Self.request(server, "/console/accounts", cookies: cookies).formToken)
            try await server.modify([Op.create("bob-visit", ["note": "Fenway"])], as: server.bob)
            let archive = try await server.client.execute(
                uri: "/console/accounts/export", method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded", .cookie: cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")],
                body: ByteBuffer(string: "formToken=\(formToken)&name=bob")
            ) { response in (response.status.code, response.headers[.contentDisposition], Data(response.body.readableBytesView)) }
            #expect(archive.0 == 200 && archive.1 == "attachment; filename=\"stadiumcloud-bob.tar\"")
            let file = URL(fileURLWithPath: NSTemporaryDirectory() + "console-export-\(UUID().uuidString).tar")
            defer { try? FileManager.default.removeItem(at: file) }
            try archive.2.write(to: file)
            let manifest = try AccountArchive.verify(at: file)
            #expect(manifest.accountName == "bob" && manifest.files.map(\.path) == ["records/d1/z1/000001.json"])
            let missing = try await Self.request(server, "/console/accounts/export", form: ["formToken": formToken, "name": "nobody"], cookies: cookies)
            #expect(missing.html.contains("No account is named nobody"))
            let forged = try await Self.request(server, "/console/accounts/export", form: ["formToken": "forged", "name": "bob"], cookies: cookies)
            #expect(forged.status != 200 || !(forged.headers[.contentType] ?? "").contains("tar"))
        }
    }

    /// Schema, jobs, credentials' last use and the overview's traffic.
    @Test func schemaJobsLastUseAndTrafficAreShown() async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            let cookies = try await Self.signedInOperator(server)
            let schema = try await Self.request(server, "/console/schema", cookies: cookies)
            #expect(schema.html.contains("<th scope=row>Stadium</th>") && schema.html.contains("canonicalId</code> STRING, immutable"))
            #expect(schema.html.contains("name (sortable)"))
            var proposed = try CanonicalFixtures.schema.get()
            proposed.recordTypes["Stadium"]?.fields.removeValue(forKey: "capacity")
            proposed.recordTypes["Stadium"]?.fields["roof"] = FieldSchema(type: .string)
            let text = String(decoding: try JSONEncoder().encode(proposed), as: UTF8.self)
            let diff = try await Self.request(
                server, "/console/schema", form: ["formToken": try #require(schema.formToken), "schema": text, "environment": "development"],
                cookies: cookies)
            #expect(diff.html.contains("field Stadium.roof") && diff.html.contains("field Stadium.capacity would be removed"), "\(diff.html)")
            let unreadable = try await Self.request(
                server, "/console/schema", form: ["formToken": try #require(schema.formToken), "schema": "{"], cookies: cookies)
            #expect(unreadable.html.contains("cannot be read"))

            let configuration = ServerConfiguration()
            await recordedRun(of: "tombstone-purge", records: server.dependencies.records, clock: configuration.clock, logger: TestDatabase.logger) {
                "3 record and 0 zone tombstone(s) purged"
            }
            await recordedRun(of: "asset-collector", records: server.dependencies.records, clock: configuration.clock, logger: TestDatabase.logger) {
                throw CloudError.badRequest("secret detail")
            }
            let jobs = try await Self.request(server, "/console/jobs", cookies: cookies)
            #expect(jobs.html.contains("3 record and 0 zone tombstone(s) purged") && jobs.html.contains("failed: see the server"))
            #expect(!jobs.html.contains("secret detail") && jobs.html.contains("Tombstone purge horizon"))

            #expect(try await server.call("zones/list", database: "public").status == 200)
            let credentials = try await Self.request(server, "/console/credentials", cookies: cookies)
            #expect(credentials.html.contains(" UTC</td><td>active"), "the test's API token was used")
            let overview = try await Self.request(server, "/console", cookies: cookies)
            #expect(overview.html.contains("<td>zones</td>") && overview.html.contains("<svg"))
        }
    }
}
