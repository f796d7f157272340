import CloudCore
import CloudPostgres
import CloudRuntime
import Hummingbird
import Logging
import NIOCore

/// `users/current` and `users/caller`: who the signed-in person is.
extension DatabaseController {
    func currentUser(_ request: Request, _ context: CloudRequestContext, caller isCaller: Bool) async throws -> Response {
        _ = try self.containerAndEnvironment(context)  // any database segment is accepted here (reference §1)
        return try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.clock) {
            try await self.user(request, logger: context.logger, caller: isCaller)
        }
    }

    /// The identity as both readers take it: `users/caller` in the archived reference is `{"users": [identity]}`, while
    /// CloudKit JS hands the whole body to the app as the identity; the caller answer has both. A request signed with
    /// a server-to-server key is the operator (never 421: fetch implementations repeat a 421 with the same signature,
    /// and the replay guard refuses the copy).
    func user(_ request: Request, logger: Logger, caller isCaller: Bool) async throws -> Response {
        let caller = try await self.authenticator.caller(for: request, body: ByteBuffer(), logger: logger)
        let identity: (recordName: String, name: String)
        if let account = caller.account {
            identity = (account.userRecordName, account.name)
        } else if let key = caller.serverKeyID {
            identity = (caller.userRecordName, "operator (server-to-server key \(key))")
        } else {
            throw self.authenticator.authenticationRequired(
                request, "users/\(isCaller ? "caller" : "current") needs a signed-in user (ckWebAuthToken)")
        }
        var writer = WireWriter()
        writer.json.object { json in
            let fields: [String: JSONValue] = [
                "userRecordName": .string(identity.recordName), "nameComponents": ["givenName": .string(identity.name)],
                "lookupInfo": ["userRecordName": .string(identity.recordName)],
            ]
            if isCaller {
                json.key("users"); json.array { $0.value(.object(fields)) }
                for (key, value) in fields.sorted(by: { $0.key < $1.key }) { json.key(key); json.value(value) }
            } else {
                json.key("userRecordName"); json.string(identity.recordName)
                json.key("firstName"); json.string(identity.name)
            }
        }
        var response = writer.response()
        response.headers[.webAuthToken] = await self.authenticator.rotatedToken(for: caller, request: request, logger: logger)
        return response
    }
}

/// Extension `users/delete`: the signed-in person erases their own account and everything in it (docs/PRIVACY.md).
extension DatabaseController {
    /// The password again, so a token alone (a lost phone, a stolen token) cannot erase an account; each try counts
    /// against the account's sign-in budget, so it is no way around it. An account without a password (its tokens
    /// handed out by an operator) is erased by the operator (`stadiumcloud accounts delete`).
    @Sendable func deleteAccount(_ call: DatabaseCall) async throws -> WireWriter {
        guard call.database.scope == .private, let account = call.caller.account else {
            throw CloudError.badRequest("users/delete erases the signed-in person's own account: call it on the private database")
        }
        guard let password = try call.body.string("password"), !password.isEmpty else {
            throw CloudError.badRequest("password is required: erasing an account needs its password again")
        }
        try SignInController.throttle(account.name, self.authenticator.limiter, self.configuration.rateLimits)
        guard try await self.authenticator.credentials.checkPassword(accountName: account.name, password: password, logger: call.logger) else {
            throw CloudError.accessDenied("that is not the account's password; nothing was erased")
        }
        guard
            let erased = try await eraseAccount(
                account.name, records: self.records, credentials: self.authenticator.credentials, assets: self.assets,
                limiter: self.authenticator.limiter, logger: call.logger)
        else { throw CloudError.notFound("the account no longer exists") }
        var writer = WireWriter()
        writer.json.value([
            "userRecordName": .string(account.userRecordName), "erased": true, "databases": .int(Int64(erased.databases)),
            "records": .int(Int64(erased.records)), "assets": .int(Int64(erased.assets)), "publicRecords": .int(Int64(erased.publicRecords)),
        ])
        return writer
    }
}

/// Extension `users/export`: the signed-in person's whole account as one archive (docs/PRIVACY.md, "Export").
extension DatabaseController {
    /// Streamed as it is read, so memory stays flat whatever the account holds. A session is enough: everything in it
    /// is already the caller's to read. A stream cut short has no manifest, and every reader refuses it.
    @Sendable func exportAccount(_ call: DatabaseCall) async throws -> Response {
        guard call.database.scope == .private, let account = call.caller.account else {
            throw CloudError.badRequest("users/export exports the signed-in person's own account: call it on the private database")
        }
        guard let export = try await AccountExport.of(account.name, records: self.records, logger: call.logger) else {
            throw CloudError.notFound("the account no longer exists")
        }
        return try export.response(records: self.records, assets: self.assets, logger: call.logger)
    }
}
