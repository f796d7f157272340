import CloudCore
import CloudPostgres
import Foundation
import Hummingbird
import Logging

/// Accounts (search, create, set a password, end a person's sessions, erase, export) and credentials (API tokens and
/// server-to-server keys with their last use; create and revoke).
extension ConsoleController {
    func accounts(_ session: ConsoleSession, search: String, notice: (text: String, error: Bool)?, _ logger: Logger) async throws -> Response {
        let found = try await self.dependencies.credentials.accounts(matching: search, logger: logger)
        let rows = found.map { account in
            let name = ConsoleFormat.escape(account.name)
            return """
                <tr><td>\(name)</td><td>\(ConsoleFormat.date(account.createdMs))</td>\
                <td>\(account.isOperator ? "operator" : "person")</td><td>\(account.hasPassword ? "yes" : "no")</td>
                <td><form method=post action="/console/accounts" class=row>\(self.formToken(session))<input type=hidden name=action value=password>\
                <input type=hidden name=name value="\(name)"><label>New password for \(name) <input name=password type=password \
                autocomplete=new-password minlength=\(PasswordHasher.minimumPasswordLength) required></label><button>Set</button></form></td>
                <td><form method=post action="/console/accounts">\(self.formToken(session))<input type=hidden name=action value=end-sessions>\
                <input type=hidden name=name value="\(name)"><button aria-label="End every session of \(name)">End sessions</button></form></td>
                <td><form method=post action="/console/accounts" class=row>\(self.formToken(session))<input type=hidden name=action value=erase>\
                <input type=hidden name=name value="\(name)"><label>Type <b>\(name)</b> to erase it and everything in it, for good \
                <input name=confirm required autocomplete=off></label><button>Erase</button></form></td>
                <td><form method=post action="/console/accounts/export">\(self.formToken(session))<input type=hidden name=name value="\(name)">\
                <button aria-label="Download everything of \(name) as one archive">Export</button></form></td></tr>
                """
        }.joined()
        return self.html(
            "Accounts",
            """
            <h1>Accounts</h1>
            \(self.notice(notice?.text, error: notice?.error ?? false))
            <form method=get action="/console/accounts" role=search class=row><label>Name contains <input name=q value="\(ConsoleFormat.escape(search))"></label>
            <button>Search</button></form>
            <table><caption>\(found.count) account(s)\(found.count == 100 ? " (the first 100)" : "")</caption>
            <thead><tr><th scope=col>Name</th><th scope=col>Created</th><th scope=col>Role</th><th scope=col>Password</th>\
            <th scope=col>Change the password</th><th scope=col>Sessions</th><th scope=col>Erase (docs/PRIVACY.md)</th><th scope=col>Export</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            <section aria-labelledby=create><h2 id=create>Create an account</h2>
            <form method=post action="/console/accounts">\(self.formToken(session))<input type=hidden name=action value=create>
            <div class=row><label>Name <input name=name required maxlength=255></label>
            <label>Password <input name=password type=password autocomplete=new-password minlength=\(PasswordHasher.minimumPasswordLength) required></label>
            <label><input type=checkbox name=operator value=on> Operator (signs in to this console, not to the app)</label>
            <button>Create</button></div></form></section>
            """, session: session)
    }

    func changeAccount(_ session: ConsoleSession, _ form: [String: String], _ logger: Logger) async throws -> Response {
        let store = self.dependencies.credentials
        let name = form["name"] ?? ""
        let shown = ConsoleFormat.escape(name)
        var notice: (text: String, error: Bool)
        do {
            switch form["action"] {
            case "create":
                _ = try await store.createAccount(name: name, password: form["password"] ?? "", idleMs: 0, logger: logger)
                // The first session a new account gets is for the CLI's printout; nobody holds it here.
                _ = try await store.endSessions(accountName: name, logger: logger)
                if form["operator"] == "on" { _ = try await store.setOperator(accountName: name, true, logger: logger) }
                notice = ("Account \(shown) created\(form["operator"] == "on" ? " as an operator" : "").", false)
            case "password":
                let found = try await store.setPassword(accountName: name, password: form["password"] ?? "", logger: logger)
                notice = found ? ("The password of \(shown) is set; its sessions stay signed in.", false) : ("No account is named \(shown).", true)
            case "end-sessions":
                let ended = try await store.endSessions(accountName: name, logger: logger)
                notice =
                    ended.map { ("\($0) session(s) of \(shown) ended: its devices sign in again.", false) } ?? ("No account is named \(shown).", true)
            case "erase":
                notice = try await self.erase(name, confirmed: form["confirm"] ?? "", by: session, logger)
            default:
                return self.refused("Unknown action.", signIn: false)
            }
        } catch let error as CloudError {
            // Name and password rules, an existing name: the store's reasons are written for people.
            notice = (ConsoleFormat.escape(error.reason), true)
        }
        logger.notice(
            "an operator changed an account in the console",
            metadata: ["operator": "\(session.account.name)", "action": "\(form["action"] ?? "")", "account": "\(name)"])
        return try await self.accounts(session, search: "", notice: notice, logger)
    }

    /// Erases an account once the operator typed its name (docs/PRIVACY.md); never the operator's own.
    func erase(_ name: String, confirmed: String, by session: ConsoleSession, _ logger: Logger) async throws -> (text: String, error: Bool) {
        let shown = ConsoleFormat.escape(name)
        guard confirmed == name else { return ("Type the account's name, \(shown), to confirm: nothing was erased.", true) }
        guard name != session.account.name else { return ("You are signed in as \(shown): another operator erases this account.", true) }
        let dependencies = self.dependencies
        guard
            let erased = try await eraseAccount(
                name, records: dependencies.records, credentials: dependencies.credentials, assets: dependencies.assets, limiter: self.limiter,
                logger: logger)
        else { return ("No account is named \(shown).", true) }
        return (
            "\(shown) erased: \(erased.databases) database(s), \(erased.records) record(s), \(erased.assets) asset(s); "
                + "\(erased.publicRecords) public record(s) deleted. Its devices are signed out.", false
        )
    }

    /// The account's export (docs/PRIVACY.md, "Export"), downloaded as it is read.
    func export(_ session: ConsoleSession, _ form: [String: String], _ logger: Logger) async throws -> Response {
        let name = form["name"] ?? ""
        let dependencies = self.dependencies
        guard let export = try await AccountExport.of(name, records: dependencies.records, logger: logger) else {
            return try await self.accounts(session, search: "", notice: ("No account is named \(ConsoleFormat.escape(name)).", true), logger)
        }
        logger.notice("an operator exported an account in the console", metadata: ["operator": "\(session.account.name)", "account": "\(name)"])
        return try export.response(records: dependencies.records, assets: dependencies.assets, logger: logger)
    }

    func credentials(_ session: ConsoleSession, notice: String?, _ logger: Logger) async throws -> Response {
        let store = self.dependencies.credentials
        func status(_ revokedMs: Int64?) -> String { revokedMs.map { "revoked \(ConsoleFormat.date($0))" } ?? "active" }
        func used(_ ms: Int64?) -> String { ms.map(ConsoleFormat.dateTime) ?? "never" }
        func revoke(_ field: String, _ value: String, _ what: String) -> String {
            """
            <form method=post action="/console/credentials">\(self.formToken(session))\
            <input type=hidden name=action value=revoke-\(field)><input type=hidden name=\(field) value="\(value)">\
            <button aria-label="Revoke \(ConsoleFormat.escape(what))">Revoke</button></form>
            """
        }
        let tokens = try await store.apiTokens(logger: logger).map { token in
            """
            <tr><td><code>\(token.fingerprint)</code></td><td>\(ConsoleFormat.escape(token.label ?? ""))</td><td>\(ConsoleFormat.date(token.createdMs))</td>\
            <td>\(used(token.lastUsedMs))</td><td>\(status(token.revokedMs))</td>\
            <td>\(token.revokedMs == nil ? revoke("token", token.fingerprint, "API token \(token.label ?? token.fingerprint)") : "")</td></tr>
            """
        }.joined()
        let keys = try await store.serverKeys(logger: logger).map { key in
            """
            <tr><td><code>\(key.keyID.prefix(16))…</code></td><td>\(ConsoleFormat.escape(key.label ?? ""))</td><td>\(ConsoleFormat.date(key.createdMs))</td>\
            <td>\(used(key.lastUsedMs))</td><td>\(status(key.revokedMs))</td>\
            <td>\(key.revokedMs == nil ? revoke("key", key.keyID, "server-to-server key \(key.label ?? key.keyID)") : "")</td></tr>
            """
        }.joined()
        let head = "<th scope=col>Label</th><th scope=col>Created</th><th scope=col>Last used</th><th scope=col>Status</th><th scope=col></th>"
        return self.html(
            "Credentials",
            """
            <h1>Credentials</h1>
            \(self.notice(notice))
            <section aria-labelledby=tokens><h2 id=tokens>Container API tokens</h2>
            <table><caption>Every install of the app sends one (ckAPIToken); only a fingerprint is shown; last use to the minute</caption>
            <thead><tr><th scope=col>Fingerprint</th>\(head)</tr></thead>
            <tbody>\(tokens)</tbody></table>
            <form method=post action="/console/credentials" class=row>\(self.formToken(session))
            <input type=hidden name=action value=create-token><label>Label <input name=label maxlength=100></label><button>Create an API token</button></form>
            </section>
            <section aria-labelledby=keys><h2 id=keys>Server-to-server keys</h2>
            <table><caption>Operators' programs that write the public database (stadiumcloud keys add)</caption>
            <thead><tr><th scope=col>Key id</th>\(head)</tr></thead>
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
}
