import CloudCore
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
