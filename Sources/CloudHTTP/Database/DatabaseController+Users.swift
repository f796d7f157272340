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

    func user(_ request: Request, logger: Logger, caller isCaller: Bool) async throws -> Response {
        let caller = try await self.authenticator.caller(for: request, body: ByteBuffer(), logger: logger)
        guard let account = caller.account else {
            throw self.authenticator.authenticationRequired(
                request, "users/\(isCaller ? "caller" : "current") needs a signed-in user (ckWebAuthToken)")
        }
        var writer = WireWriter()
        writer.json.object { json in
            if isCaller {
                json.key("users")
                json.array { json in
                    json.value([
                        "userRecordName": .string(account.userRecordName), "nameComponents": ["givenName": .string(account.name)],
                        "lookupInfo": ["userRecordName": .string(account.userRecordName)],
                    ])
                }
            } else {
                json.key("userRecordName"); json.string(account.userRecordName)
                json.key("firstName"); json.string(account.name)
            }
        }
        var response = writer.response()
        response.headers[.webAuthToken] = await self.authenticator.rotatedToken(for: caller, request: request, logger: logger)
        return response
    }
}
