import CloudCore
import CloudPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The operator console at `/console`: pages the server renders for the people who run it (docs/CONSOLE.md).
/// Operators sign in with accounts of their own; a session is an HttpOnly, `SameSite=Strict` cookie that ends
/// after 15 idle minutes, and every form carries the session's form token (CSRF). A person's private records appear
/// only as counts and sizes.
struct ConsoleController: Sendable {
    let dependencies: ServerDependencies
    let configuration: ServerConfiguration
    let limiter: RateLimiter
    let startedMs = Timestamp.now

    static let sessionCookie = "stadiumcloud_console"
    /// Before signing in, the sign-in form's token is checked against this cookie (double submit).
    static let formCookie = "stadiumcloud_console_form"
    static let idleMs: Int64 = 15 * 60_000

    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("console") { request, context in
            try await self.signedIn(request, context) { session in try await self.overview(session, context.logger) }
        }
        router.get("console/accounts") { request, context in
            try await self.signedIn(request, context) { session in
                try await self.accounts(session, search: request.uri.queryParameters["q"].map(String.init) ?? "", context.logger)
            }
        }
        router.get("console/credentials") { request, context in
            try await self.signedIn(request, context) { session in try await self.credentials(session, notice: nil, context.logger) }
        }
        router.post("console/credentials") { request, context in
            try await self.posted(request, context) { signedIn, form in try await self.changeCredentials(signedIn.session, form, context.logger) }
        }
        router.get("console/signin") { _, _ in self.signInPage(error: nil) }
        router.post("console/signin") { request, context in try await self.signIn(request, context) }
        router.post("console/signout") { request, context in try await self.signOut(request, context) }
    }

    // MARK: sessions

    /// The live session the request's cookie holds, with the cookie's token.
    func session(of request: Request, _ context: BasicRequestContext) async throws -> (token: String, session: ConsoleSession)? {
        guard let token = request.cookies[Self.sessionCookie]?.value,
            let session = try await self.dependencies.credentials.consoleSession(token: token, idleMs: Self.idleMs, logger: context.logger)
        else { return nil }
        return (token, session)
    }

    static let toSignIn = Response(status: .seeOther, headers: [.location: "/console/signin", .cacheControl: "no-store"])

    /// Runs `page` for a signed-in operator; anyone else is sent to the sign-in page.
    func signedIn(_ request: Request, _ context: BasicRequestContext, _ page: (ConsoleSession) async throws -> Response) async throws -> Response {
        guard let (_, session) = try await self.session(of: request, context) else { return Self.toSignIn }
        return try await page(session)
    }

    func signInPage(error: String?, status: HTTPResponse.Status = .ok) -> Response {
        let formToken = Base64URL.encode((0..<24).map { _ in UInt8.random(in: 0...255) })
        var response = self.html(
            "Sign in",
            """
            <h1>StadiumCloud console</h1>
            \(error.map { "<p class=error role=alert>\(SignInController.escape($0))</p>" } ?? "")
            <form method=post action="/console/signin">
            <input type=hidden name=formToken value="\(formToken)">
            <label>Operator account <input name=accountName autocomplete=username required autofocus></label>
            <label>Password <input name=password type=password autocomplete=current-password required></label>
            <button>Sign in</button>
            </form>
            <p>Operator accounts are made with <code>stadiumcloud accounts create NAME --operator --password-stdin</code>.</p>
            """)
        response.status = status
        response.headers[values: .setCookie].append(self.cookie(Self.formCookie, formToken, maxAge: 3600))
        return response
    }

    func signIn(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        var request = request
        let form = SignInController.formFields(try await request.collectBody(upTo: 16 * 1024))
        guard let formToken = form["formToken"], !formToken.isEmpty, formToken == request.cookies[Self.formCookie]?.value else {
            return self.refused("The form has expired or did not come from this console. Sign in again.", signIn: true)
        }
        let name = form["accountName"] ?? ""
        let password = form["password"] ?? ""
        try SignInController.throttle(name, self.limiter, self.configuration.rateLimits)
        guard (try? FieldName.validate(name, path: "", what: "")) != nil, password.utf8.count <= PasswordHasher.maximumPasswordLength,
            let (token, session) = try await self.dependencies.credentials.startConsoleSession(
                accountName: name, password: password, logger: context.logger)
        else {
            context.logger.info("console sign-in refused", metadata: ["account": "\(name)"])
            return self.signInPage(error: "Wrong operator account or password.", status: .unauthorized)
        }
        context.logger.notice("an operator signed in to the console", metadata: ["account": "\(session.account.name)"])
        var response = Response(status: .seeOther, headers: [.location: "/console", .cacheControl: "no-store"])
        response.headers[values: .setCookie].append(self.cookie(Self.sessionCookie, token, maxAge: nil))
        response.headers[values: .setCookie].append(self.cookie(Self.formCookie, "", maxAge: 0))
        return response
    }

    /// Runs `action` for a signed-in operator whose form carries the session's form token; a form without it is
    /// refused (403) and changes nothing.
    func posted(
        _ request: Request, _ context: BasicRequestContext,
        _ action: ((token: String, session: ConsoleSession), [String: String]) async throws -> Response
    ) async throws -> Response {
        var request = request
        let form = SignInController.formFields(try await request.collectBody(upTo: 16 * 1024))
        guard let (token, session) = try await self.session(of: request, context) else { return Self.toSignIn }
        guard form["formToken"] == session.formToken else { return self.refused("The form did not come from this console.", signIn: false) }
        return try await action((token, session), form)
    }

    func signOut(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        try await self.posted(request, context) { signedIn, _ in
            try await self.dependencies.credentials.endConsoleSession(token: signedIn.token, logger: context.logger)
            var response = Self.toSignIn
            response.headers[values: .setCookie].append(self.cookie(Self.sessionCookie, "", maxAge: 0))
            return response
        }
    }

    func refused(_ reason: String, signIn: Bool) -> Response {
        var response = self.html(
            "Refused",
            "<h1>Refused</h1><p class=error role=alert>\(SignInController.escape(reason))</p><p><a href=\"/console\(signIn ? "/signin" : "")\">Back</a></p>"
        )
        response.status = .forbidden
        return response
    }

    // MARK: pages

    func overview(_ session: ConsoleSession, _ logger: Logger) async throws -> Response {
        let statistics = try await self.dependencies.records.statistics(logger: logger)
        let outage = self.dependencies.records.databaseOutage
        let uptime = (Timestamp.now - self.startedMs) / 1000
        let records = statistics.records.map { row in
            "<tr><td>\(row.scope)</td><td>\(SignInController.escape(row.recordType))</td><td class=n>\(row.count)</td></tr>"
        }.joined()
        let storage = statistics.topStorage.map { row in
            "<tr><td>\(SignInController.escape(row.account))</td><td class=n>\(Self.bytes(row.bytes))</td></tr>"
        }.joined()
        return self.html(
            "Overview",
            """
            <h1>Overview</h1>
            <section aria-labelledby=health><h2 id=health>Health</h2><dl>
            <dt>Readiness</dt><dd>\(outage.map { "PostgreSQL does not answer: \(SignInController.escape($0.reason))" } ?? "ready")</dd>
            <dt>Uptime</dt><dd>\(uptime / 3600) h \(uptime % 3600 / 60) min</dd>
            <dt>Migrations</dt><dd>\(self.dependencies.migrations.count), all applied (the server does not start otherwise)</dd>
            <dt>Containers</dt><dd>\(self.configuration.containers.sorted().map(SignInController.escape).joined(separator: ", "))</dd>
            </dl></section>
            <section aria-labelledby=storage><h2 id=storage>Storage</h2><dl>
            <dt>Database</dt><dd>\(Self.bytes(statistics.databaseBytes))</dd>
            <dt>Assets</dt><dd>\(Self.bytes(statistics.assetBytes)), quota \(Self.bytes(self.configuration.accountQuotaBytes)) per account</dd>
            </dl>
            <table><caption>Top accounts by asset storage</caption><thead><tr><th scope=col>Account</th><th scope=col>Assets</th></tr></thead>
            <tbody>\(storage)</tbody></table></section>
            <section aria-labelledby=records><h2 id=records>Records</h2>
            <table><caption>Live records by database and type (private data only as counts)</caption>
            <thead><tr><th scope=col>Database</th><th scope=col>Type</th><th scope=col>Records</th></tr></thead><tbody>\(records)</tbody></table>
            </section>
            """, session: session)
    }

    func accounts(_ session: ConsoleSession, search: String, _ logger: Logger) async throws -> Response {
        let found = try await self.dependencies.credentials.accounts(matching: search, logger: logger)
        let rows = found.map { account in
            """
            <tr><td>\(SignInController.escape(account.name))</td><td>\(Self.date(account.createdMs))</td>\
            <td>\(account.isOperator ? "operator" : "person")</td><td>\(account.hasPassword ? "yes" : "no")</td></tr>
            """
        }.joined()
        return self.html(
            "Accounts",
            """
            <h1>Accounts</h1>
            <form method=get action="/console/accounts" role=search><label>Name contains <input name=q value="\(SignInController.escape(search))"></label>
            <button>Search</button></form>
            <table><caption>\(found.count) account(s)\(found.count == 100 ? " (the first 100)" : "")</caption>
            <thead><tr><th scope=col>Name</th><th scope=col>Created</th><th scope=col>Role</th><th scope=col>Password</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            """, session: session)
    }

    func credentials(_ session: ConsoleSession, notice: String?, _ logger: Logger) async throws -> Response {
        let store = self.dependencies.credentials
        func status(_ revokedMs: Int64?) -> String { revokedMs.map { "revoked \(Self.date($0))" } ?? "active" }
        func revoke(_ field: String, _ value: String, _ what: String) -> String {
            """
            <form method=post action="/console/credentials"><input type=hidden name=formToken value="\(session.formToken)">\
            <input type=hidden name=action value=revoke-\(field)><input type=hidden name=\(field) value="\(value)">\
            <button aria-label="Revoke \(what)">Revoke</button></form>
            """
        }
        let tokens = try await store.apiTokens(logger: logger).map { token in
            let label = SignInController.escape(token.label ?? "")
            return """
                <tr><td><code>\(token.fingerprint)</code></td><td>\(label)</td><td>\(Self.date(token.createdMs))</td><td>\(status(token.revokedMs))</td>\
                <td>\(token.revokedMs == nil ? revoke("token", token.fingerprint, "API token \(token.label ?? token.fingerprint)") : "")</td></tr>
                """
        }.joined()
        let keys = try await store.serverKeys(logger: logger).map { key in
            """
            <tr><td><code>\(key.keyID.prefix(16))…</code></td><td>\(SignInController.escape(key.label ?? ""))</td><td>\(Self.date(key.createdMs))</td>\
            <td>\(status(key.revokedMs))</td><td>\(key.revokedMs == nil ? revoke("key", key.keyID, "server-to-server key \(key.label ?? key.keyID)") : "")</td></tr>
            """
        }.joined()
        return self.html(
            "Credentials",
            """
            <h1>Credentials</h1>
            \(notice.map { "<p class=notice role=status>\($0)</p>" } ?? "")
            <section aria-labelledby=tokens><h2 id=tokens>Container API tokens</h2>
            <table><caption>Every install of the app sends one (ckAPIToken); only a fingerprint is shown</caption>
            <thead><tr><th scope=col>Fingerprint</th><th scope=col>Label</th><th scope=col>Created</th><th scope=col>Status</th><th scope=col></th></tr></thead>
            <tbody>\(tokens)</tbody></table>
            <form method=post action="/console/credentials"><input type=hidden name=formToken value="\(session.formToken)">
            <input type=hidden name=action value=create-token><label>Label <input name=label maxlength=100></label><button>Create an API token</button></form>
            </section>
            <section aria-labelledby=keys><h2 id=keys>Server-to-server keys</h2>
            <table><caption>Operators' programs that write the public database (stadiumcloud keys add)</caption>
            <thead><tr><th scope=col>Key id</th><th scope=col>Label</th><th scope=col>Created</th><th scope=col>Status</th><th scope=col></th></tr></thead>
            <tbody>\(keys)</tbody></table></section>
            """, session: session)
    }

    func changeCredentials(_ session: ConsoleSession, _ form: [String: String], _ logger: Logger) async throws -> Response {
        let store = self.dependencies.credentials
        let notice: String
        switch form["action"] {
        case "create-token":
            let label = String((form["label"] ?? "").prefix(100))
            let token = try await store.createAPIToken(label: label.isEmpty ? nil : label, logger: logger)
            notice = "New API token (shown this once): <code id=new-token>\(token)</code>"
        case "revoke-token":
            let found = try await store.revokeAPIToken(fingerprint: form["token"] ?? "", logger: logger)
            notice = found ? "API token revoked: no process accepts it after a second." : "No live API token has that fingerprint."
        case "revoke-key":
            let found = try await store.revokeServerKey(id: form["key"] ?? "", logger: logger)
            notice = found ? "Server-to-server key revoked." : "No live key has that id."
        default:
            return self.refused("Unknown action.", signIn: false)
        }
        logger.notice(
            "an operator changed credentials in the console", metadata: ["operator": "\(session.account.name)", "action": "\(form["action"] ?? "")"])
        return try await self.credentials(session, notice: notice, logger)
    }

    // MARK: HTML and HTTP

    /// A console page: navigation and sign-out when signed in; never cached, never framed, no scripts from anywhere.
    func html(_ title: String, _ body: String, session: ConsoleSession? = nil) -> Response {
        let navigation = session.map { session in
            """
            <nav aria-label=Console><a href="/console">Overview</a> <a href="/console/accounts">Accounts</a> <a href="/console/credentials">Credentials</a>
            <form method=post action="/console/signout" class=inline><input type=hidden name=formToken value="\(session.formToken)">
            <button>Sign out \(SignInController.escape(session.account.name))</button></form></nav>
            """
        }
        let page = """
            <!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content="width=device-width">
            <title>\(title) · StadiumCloud console</title><style>
            body{font:16px system-ui;max-width:60em;margin:2em auto;padding:0 1em;color:#111;background:#fff}
            nav{display:flex;gap:1em;align-items:center;border-bottom:1px solid #767676;padding-bottom:.5em}
            a{color:#0645ad}.inline{display:inline;margin-left:auto}label{display:block;margin:.6em 0}
            table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #767676;padding:.3em .6em;text-align:left}.n{text-align:right}
            caption{text-align:left;font-weight:600;padding:.3em 0}.error{color:#a00000}dt{font-weight:600}td form{margin:0}
            .notice{border:1px solid #767676;padding:.5em;word-break:break-all}
            button{font:inherit;padding:.3em .8em}:focus{outline:3px solid #0645ad}
            </style></head><body>\(navigation ?? "")<main>\(body)</main></body></html>
            """
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
                HTTPField.Name("X-Frame-Options")!: "DENY", HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                HTTPField.Name("Referrer-Policy")!: "no-referrer",
            ],
            body: .init(byteBuffer: ByteBuffer(string: page)))
    }

    /// A `Set-Cookie` value: HttpOnly, SameSite=Strict, for `/console` only; Secure behind HTTPS.
    func cookie(_ name: String, _ value: String, maxAge: Int?) -> String {
        var cookie = "\(name)=\(value); Path=/console; HttpOnly; SameSite=Strict"
        if let maxAge { cookie += "; Max-Age=\(maxAge)" }
        if self.configuration.publicBaseURL?.hasPrefix("https://") == true { cookie += "; Secure" }
        return cookie
    }

    static func bytes(_ count: Int64) -> String {
        count < 1 << 20 ? "\(count / 1024) KiB" : String(format: "%.1f MiB", Double(count) / Double(1 << 20))
    }

    static func date(_ ms: Int64) -> String {
        Date(timeIntervalSince1970: Double(ms) / 1000).formatted(.iso8601.year().month().day())
    }
}
