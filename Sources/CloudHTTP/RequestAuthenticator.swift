import CloudCore
import CloudPostgres
import Hummingbird
import Logging

/// Who is calling: the container API token's role, and the account when a web auth token came along.
struct Caller: Sendable {
    var role: APITokenRole
    var account: Account?
    var webAuthToken: String?

    /// The identity written into `created`/`modified`.
    var userRecordName: String { self.account?.userRecordName ?? "_operator" }
}

/// Checks `ckAPIToken` and `ckWebAuthToken` (or its older name `ckSession`). The one place that decides who a
/// request is; full sign-in, rotation and server-to-server keys replace this piece later (issue 5).
struct RequestAuthenticator: Sendable {
    let credentials: CredentialStore
    /// Where AUTHENTICATION_REQUIRED sends a person to sign in.
    let signInURL: String

    func caller(for request: Request, logger: Logger) async throws -> Caller {
        let query = request.uri.queryParameters
        guard let apiToken = query["ckAPIToken"].map(String.init), !apiToken.isEmpty else {
            throw CloudError(.authenticationFailed, "ckAPIToken is required (a container API token: stadiumcloud tokens create)")
        }
        guard let role = try await self.credentials.apiTokenRole(apiToken, logger: logger) else {
            throw CloudError(.authenticationFailed, "ckAPIToken is not a valid API token")
        }
        var caller = Caller(role: role)
        if let token = (query["ckWebAuthToken"] ?? query["ckSession"]).map(String.init), !token.isEmpty {
            guard let account = try await self.credentials.account(forWebAuthToken: token, logger: logger) else {
                throw self.authenticationRequired("ckWebAuthToken is not valid (expired or revoked); sign in again")
            }
            caller.account = account
            caller.webAuthToken = token
        }
        return caller
    }

    func authenticationRequired(_ reason: String = "request needs authorization") -> CloudError {
        CloudError(.authenticationRequired, reason, redirectURL: self.signInURL)
    }
}
