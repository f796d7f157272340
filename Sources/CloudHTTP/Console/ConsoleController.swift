import CloudCore
import CloudPostgres
import CloudRuntime
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
    let statistics: RequestStatistics
    /// The sports layer's import and edits of public data; without it those pages only read.
    let publicData: (any PublicDataEditor)?
    let imports: ConsoleImports
    let startedMs: Int64

    init(
        dependencies: ServerDependencies, configuration: ServerConfiguration, limiter: RateLimiter, statistics: RequestStatistics,
        publicData: (any PublicDataEditor)?
    ) {
        (self.dependencies, self.configuration, self.limiter, self.statistics) = (dependencies, configuration, limiter, statistics)
        self.publicData = publicData
        self.imports = ConsoleImports(clock: configuration.clock, changes: configuration.signals.consoleImport)
        self.startedMs = configuration.clock.now
    }

    static let sessionCookie = "stadiumcloud_console"
    /// Before signing in, the sign-in form's token is checked against this cookie (double submit).
    static let formCookie = "stadiumcloud_console_form"
    static let idleMs: Int64 = 15 * 60_000

    func addRoutes(to router: Router<CloudRequestContext>) {
        self.page(router, "console") { request, session, logger in try await self.overview(session, logger) }
        self.page(router, "console/public") { request, session, logger in try await self.publicRecords(request, session, logger) }
        self.page(router, "console/public/record") { request, session, logger in try await self.publicRecord(request, session, notice: nil, logger) }
        self.page(router, "console/public/changes") { request, session, logger in try await self.publicChanges(request, session, logger) }
        self.form(router, "console/public/edit") { session, form, logger in try await self.editPublicRecord(session, form, logger) }
        self.page(router, "console/import") { request, session, logger in try await self.importPage(request, session, logger) }
        self.form(router, "console/import") { session, form, logger in try await self.startImport(session, form, logger) }
        router.post("console/import/upload") { request, context in try await self.uploadDataset(request, context) }
        self.page(router, "console/schema") { request, session, logger in try await self.schemaPage(self.scope(of: request), session, logger) }
        self.form(router, "console/schema", maxBytes: 1 << 20) { session, form, logger in try await self.diffSchema(session, form, logger) }
        self.page(router, "console/accounts") { request, session, logger in
            try await self.accounts(session, search: request.uri.queryParameters["q"].map(String.init) ?? "", notice: nil, logger)
        }
        self.form(router, "console/accounts") { session, form, logger in try await self.changeAccount(session, form, logger) }
        self.form(router, "console/accounts/export") { session, form, logger in try await self.export(session, form, logger) }
        self.page(router, "console/credentials") { request, session, logger in try await self.credentials(session, notice: nil, logger) }
        self.form(router, "console/credentials") { session, form, logger in try await self.changeCredentials(session, form, logger) }
        self.page(router, "console/jobs") { request, session, logger in try await self.jobsPage(session, logger) }
        router.get("console/signin") { _, _ in self.signInPage(error: nil) }
        router.post("console/signin") { request, context in try await self.signIn(request, context) }
        router.post("console/signout") { request, context in try await self.signOut(request, context) }
    }

    /// A page for signed-in operators (GET).
    func page(
        _ router: Router<CloudRequestContext>, _ path: String,
        _ render: @escaping @Sendable (Request, ConsoleSession, Logger) async throws -> Response
    ) {
        router.get(RouterPath(path)) { request, context in
            try await self.signedIn(request, context) { session in try await render(request, session, context.logger) }
        }
    }

    /// A form for signed-in operators (POST), checked for the session's form token.
    func form(
        _ router: Router<CloudRequestContext>, _ path: String, maxBytes: Int = 16 * 1024,
        _ action: @escaping @Sendable (ConsoleSession, [String: String], Logger) async throws -> Response
    ) {
        router.post(RouterPath(path)) { request, context in
            try await self.posted(request, context, maxBytes: maxBytes) { signedIn, form in try await action(signedIn.session, form, context.logger) }
        }
    }

    // MARK: sessions

    /// The live session the request's cookie holds, with the cookie's token.
    func session(of request: Request, _ context: CloudRequestContext) async throws -> (token: String, session: ConsoleSession)? {
        guard let token = request.cookies[Self.sessionCookie]?.value,
            let session = try await self.dependencies.credentials.consoleSession(token: token, idleMs: Self.idleMs, logger: context.logger)
        else { return nil }
        return (token, session)
    }

    static let toSignIn = Response(status: .seeOther, headers: [.location: "/console/signin", .cacheControl: "no-store"])

    /// Runs `page` for a signed-in operator; anyone else is sent to the sign-in page.
    func signedIn(_ request: Request, _ context: CloudRequestContext, _ page: (ConsoleSession) async throws -> Response) async throws -> Response {
        guard let (_, session) = try await self.session(of: request, context) else { return Self.toSignIn }
        return try await page(session)
    }

    func signInPage(error: String?, status: HTTPResponse.Status = .ok) -> Response {
        let formToken = Base64URL.encode((0..<24).map { _ in UInt8.random(in: 0...255) })
        var response = self.html(
            "Sign in",
            """
            <h1>StadiumCloud console</h1>
            \(error.map { "<p class=error role=alert>\(ConsoleFormat.escape($0))</p>" } ?? "")
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

    func signIn(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        var request = request
        let form = SignInController.formFields(try await request.collectBody(upTo: 16 * 1024))
        guard let formToken = form["formToken"], !formToken.isEmpty, formToken == request.cookies[Self.formCookie]?.value else {
            return self.refused("The form has expired or did not come from this console. Sign in again.", signIn: true)
        }
        let name = form["accountName"] ?? ""
        let password = form["password"] ?? ""
        do {
            try SignInController.throttle(name, self.limiter, self.configuration.rateLimits)
        } catch let error as CloudError where error.code == .throttled {
            // A person at a browser gets the page again, saying when to retry, not the API's JSON.
            let seconds = error.retryAfter ?? 1
            var page = self.signInPage(
                error: "Too many sign-in attempts. Try again in \(seconds) second\(seconds == 1 ? "" : "s").", status: .tooManyRequests)
            page.headers[.retryAfter] = String(seconds)
            return page
        }
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
        _ request: Request, _ context: CloudRequestContext, maxBytes: Int = 16 * 1024,
        _ action: ((token: String, session: ConsoleSession), [String: String]) async throws -> Response
    ) async throws -> Response {
        var request = request
        let form = SignInController.formFields(try await request.collectBody(upTo: maxBytes))
        guard let (token, session) = try await self.session(of: request, context) else { return Self.toSignIn }
        guard form["formToken"] == session.formToken else { return self.refused("The form did not come from this console.", signIn: false) }
        return try await action((token, session), form)
    }

    func signOut(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
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
            "<h1>Refused</h1><p class=error role=alert>\(ConsoleFormat.escape(reason))</p><p><a href=\"/console\(signIn ? "/signin" : "")\">Back</a></p>"
        )
        response.status = .forbidden
        return response
    }

    // MARK: HTML and HTTP

    /// The hidden field every console form carries (CSRF).
    func formToken(_ session: ConsoleSession) -> String { "<input type=hidden name=formToken value=\"\(session.formToken)\">" }

    /// A line at the top of a page saying what an action did (or, as an alert, why it did not).
    func notice(_ text: String?, error: Bool = false) -> String {
        text.map { error ? "<p class=error role=alert>\($0)</p>" : "<p class=notice role=status>\($0)</p>" } ?? ""
    }

    /// A console page: navigation and sign-out when signed in; never cached, never framed, no scripts from anywhere.
    func html(_ title: String, _ body: String, session: ConsoleSession? = nil, refreshSeconds: Int? = nil) -> Response {
        let navigation = session.map { session in
            """
            <nav aria-label=Console><a href="/console">Overview</a> <a href="/console/public">Public data</a> <a href="/console/import">Import</a>
            <a href="/console/schema">Schema</a> <a href="/console/accounts">Accounts</a> <a href="/console/credentials">Credentials</a>
            <a href="/console/jobs">Jobs</a>
            <form method=post action="/console/signout" class=inline>\(self.formToken(session))
            <button>Sign out \(ConsoleFormat.escape(session.account.name))</button></form></nav>
            """
        }
        let page = """
            <!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content="width=device-width">
            \(refreshSeconds.map { "<meta http-equiv=refresh content=\($0)>" } ?? "")
            <title>\(ConsoleFormat.escape(title)) · StadiumCloud console</title><style>
            body{font:16px system-ui;max-width:60em;margin:2em auto;padding:0 1em;color:#111;background:#fff}
            nav{display:flex;gap:1em;align-items:center;border-bottom:1px solid #767676;padding-bottom:.5em}
            a{color:#0645ad}.inline{display:inline;margin-left:auto}label{display:block;margin:.6em 0}
            table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #767676;padding:.3em .6em;text-align:left}.n{text-align:right}
            caption{text-align:left;font-weight:600;padding:.3em 0}.error{color:#a00000}dt{font-weight:600}td form{margin:0}
            .notice{border:1px solid #767676;padding:.5em;word-break:break-all}
            button{font:inherit;padding:.3em .8em}:focus{outline:3px solid #0645ad}input,select,textarea{font:inherit}
            .row{display:flex;gap:1em;align-items:end;flex-wrap:wrap}.row label{margin:.3em 0}progress{width:100%;height:1.5em}
            pre{background:#f4f4f4;padding:.5em;overflow:auto;max-height:30em}textarea{width:100%}
            fieldset{border:1px solid #767676;margin:1em 0}legend{font-weight:600}
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
}

/// How console pages and job outcomes write sizes, dates and text.
enum ConsoleFormat {
    static func bytes(_ count: Int64) -> String {
        count < 1 << 20 ? "\(count / 1024) KiB" : String(format: "%.1f MiB", Double(count) / Double(1 << 20))
    }

    static func date(_ ms: Int64) -> String {
        Date(timeIntervalSince1970: Double(ms) / 1000).formatted(.iso8601.year().month().day())
    }

    static func dateTime(_ ms: Int64) -> String {
        Date(timeIntervalSince1970: Double(ms) / 1000).formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false)) + " UTC"
    }

    /// `text` safe inside HTML text and double-quoted attributes.
    static func escape(_ text: String) -> String { SignInController.escape(text) }
}
