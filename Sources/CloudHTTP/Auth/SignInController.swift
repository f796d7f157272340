import CloudCore
import CloudPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// The sign-in page AUTHENTICATION_REQUIRED points to (`GET /signin`), password sign-in for pages and programs
/// (`POST /signin`, form or JSON) and sign-out (`POST /signout`). docs/AUTH.md has the flows.
struct SignInController: Sendable {
    let credentials: CredentialStore
    let configuration: ServerConfiguration
    let limiter: RateLimiter

    func addRoutes(to router: Router<CloudRequestContext>) {
        router.get("signin") { request, _ in
            let callback = request.uri.queryParameters["callback"].map(String.init)
            try self.checkCallback(callback)
            return Self.page(Self.form(callback: callback, error: nil))
        }
        router.post("signin") { request, context in try await self.signIn(request, context) }
        router.post("signout") { request, context in
            if let token = RequestAuthenticator.webAuthToken(of: request) {
                try await self.credentials.endSession(token: token, logger: context.logger)
            }
            return OperationsController.json([:])
        }
    }

    struct SignInForm {
        var accountName = ""
        var password = ""
        var keepSignedIn = false
        var callback: String?
        var wantsJSON = false
    }

    func signIn(_ request: Request, _ context: CloudRequestContext) async throws -> Response {
        var request = request
        let form = try Self.parse(try await request.collectBody(upTo: 64 * 1024), request: request)
        try self.checkCallback(form.callback)
        try Self.throttle(form.accountName, self.limiter, self.configuration.rateLimits)
        let auth = self.configuration.auth
        let idleSeconds = form.keepSignedIn ? auth.keepSignedInSeconds : auth.sessionIdleSeconds
        guard form.password.utf8.count <= PasswordHasher.maximumPasswordLength,
            let (account, token) = try await self.credentials.signIn(
                accountName: form.accountName, password: form.password, idleMs: Int64(idleSeconds) * 1000, logger: context.logger)
        else {
            context.logger.info("sign-in refused", metadata: ["account": "\(form.accountName)"])
            let error = CloudError(.authenticationFailed, "wrong account name or password")
            if form.wantsJSON { throw error }
            var response = Self.page(Self.form(callback: form.callback, error: error.reason))
            response.status = .unauthorized
            return response
        }
        context.logger.info("signed in", metadata: ["account": "\(account.name)"])
        if form.wantsJSON {
            var response = OperationsController.json([
                "ckWebAuthToken": .string(token), "userRecordName": .string(account.userRecordName),
                "expiresInSeconds": .int(Int64(idleSeconds)),
            ])
            response.headers[.cacheControl] = "no-store"
            return response
        }
        if let callback = form.callback {
            var query = URLComponents()
            query.queryItems = [URLQueryItem(name: "ckWebAuthToken", value: token)]
            let encoded = (query.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
            return Response(
                status: .seeOther, headers: [.location: callback + (callback.contains("?") ? "&" : "?") + encoded, .cacheControl: "no-store"])
        }
        return Self.page(
            "<h1>Signed in</h1><p>Signed in as \(Self.escape(account.name)). Your web auth token (ckWebAuthToken):</p><pre>\(Self.escape(token))</pre>",
            script: Self.handBackToOpener(token: token, userRecordName: account.userRecordName, origins: self.configuration.webOrigins))
    }

    /// CloudKit JS signs a person in from a web app by opening the sign-in page in a popup and waiting for the popup to
    /// post the session to its opener (`{ckSession}`). The message is posted once per allowed origin, each time with
    /// that origin as the target: the browser delivers it only when the opener's origin is that one, so a page of any
    /// other origin that opened the popup receives nothing (never `*`). The page cannot be framed, and is not cached.
    static func handBackToOpener(token: String, userRecordName: String, origins: Set<String>) -> String? {
        guard !origins.isEmpty else { return nil }
        // JSON inside a script element, with `<` escaped inside its strings so no text can close the element.
        func literal(_ value: JSONValue) -> String { JSONWriter.encode(value).replacingOccurrences(of: "<", with: "\\u003c") }
        let message = literal(["ckSession": .string(token), "ckWebAuthToken": .string(token), "userRecordName": .string(userRecordName)])
        let targets = literal(.array(origins.sorted().map(JSONValue.string)))
        return """
            if (window.opener) { var m = \(message); \(targets).forEach(function (o) { try { window.opener.postMessage(m, o); } catch (e) {} }); window.close(); }
            """
    }

    /// A callback must start with an operator-approved prefix: otherwise a crafted link could send a person's
    /// token to whoever wrote the link.
    func checkCallback(_ callback: String?) throws {
        guard let callback else { return }
        guard self.configuration.auth.signInCallbackPrefixes.contains(where: { !$0.isEmpty && callback.hasPrefix($0) }) else {
            throw CloudError.badRequest("callback \(callback) is not an allowed sign-in callback (serve --signin-callback)")
        }
    }

    /// Reads a JSON body (`{"accountName","password","keepSignedIn","callback"}`) or an HTML form post.
    /// Long because it reads both shapes field by field, with a clear error for each mistake.
    static func parse(_ body: ByteBuffer, request: Request) throws -> SignInForm {
        var form = SignInForm()
        let contentType = request.headers[.contentType] ?? ""
        form.wantsJSON = contentType.contains("json") || (request.headers[.accept] ?? "").contains("application/json")
        if contentType.contains("json") || body.readableBytesView.first == UInt8(ascii: "{") {
            let object = try WireObject(try JSONValue.parse(body.readableBytesView), path: "")
            form.accountName = try object.string("accountName") ?? ""
            form.password = try object.string("password") ?? ""
            form.keepSignedIn = try object.bool("keepSignedIn") ?? false
            form.callback = try object.string("callback")
            form.wantsJSON = true
        } else {
            let fields = Self.formFields(body)
            form.accountName = fields["accountName"] ?? ""
            form.password = fields["password"] ?? ""
            form.keepSignedIn = !(fields["keepSignedIn"] ?? "").isEmpty
            form.callback = fields["callback"].flatMap { $0.isEmpty ? nil : $0 }
        }
        guard !form.accountName.isEmpty, !form.password.isEmpty else { throw CloudError.badRequest("accountName and password are required") }
        try FieldName.validate(form.accountName, path: "signin", what: "accountName")
        return form
    }

    /// Every sign-in attempt counts against the server's total and the account name's own budget (the console's too).
    static func throttle(_ accountName: String, _ limiter: RateLimiter, _ limits: RateLimits) throws {
        try limiter.take("signin", limits.signInTotal, what: "server's sign-in page")
        try limiter.take(RateLimitKeys.signIn(accountName), limits.signInPerAccount, what: "account's sign-in")
    }

    /// An `application/x-www-form-urlencoded` body; a name given twice keeps its last value, a pair without a name
    /// (`=`, `=x`) is ignored.
    static func formFields(_ body: ByteBuffer) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body.readableBytesView, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            guard !parts[0].isEmpty else { continue }
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }

    static func form(callback: String?, error: String?) -> String {
        """
        <h1>Sign in to StadiumCloud</h1>
        \(error.map { "<p class=error>\(escape($0))</p>" } ?? "")
        <form method=post action="/signin">
        <label>Account <input name=accountName autocomplete=username required></label>
        <label>Password <input name=password type=password autocomplete=current-password required></label>
        <label><input name=keepSignedIn type=checkbox value=1> Keep me signed in (2 weeks)</label>
        \(callback.map { "<input type=hidden name=callback value=\"\(escape($0))\">" } ?? "")
        <button>Sign in</button>
        </form>
        """
    }

    /// A page; `script`, when given, runs under a nonce of this answer only (no other script can).
    static func page(_ content: String, script: String? = nil) -> Response {
        let nonce = script.map { _ in (0..<16).map { _ in UInt8.random(in: .min ... .max) }.hexString }
        var body = content
        if let script, let nonce { body += "<script nonce=\(nonce)>\(script)</script>" }
        let html = """
            <!doctype html><html><head><meta charset=utf-8><meta name=viewport content="width=device-width">
            <title>StadiumCloud</title><style>body{font:16px system-ui;max-width:26em;margin:3em auto}label{display:block;margin:.6em 0}
            .error{color:#b00}pre{white-space:pre-wrap;word-break:break-all}</style></head><body>\(body)</body></html>
            """
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                // Nobody may frame the page (clickjacking). No form-action: browsers apply it to the callback redirect.
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
                    + (nonce.map { "; script-src 'nonce-\($0)'" } ?? ""),
            ],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
