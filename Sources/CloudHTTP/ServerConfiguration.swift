import CloudPostgres

/// Settings of a running server (flags over environment over these defaults; see `stadiumcloud serve --help`).
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Largest JSON request body accepted (200 operations of small records fit easily).
    public var maxBodyBytes = 16 * 1024 * 1024
    /// How long deletions stay visible to deltas; older tokens get CHANGE_TOKEN_EXPIRED.
    public var tombstoneRetention: Duration = .seconds(30 * 24 * 3600)
    /// How often the purge job runs.
    public var purgeInterval: Duration = .seconds(3600)
    /// The page AUTHENTICATION_REQUIRED points to.
    public var signInURL = "/signin"
    public var limits = RecordLimits()

    public init() {}
}
