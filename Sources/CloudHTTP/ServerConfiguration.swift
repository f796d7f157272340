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
    /// Where `FileAssetStore` keeps asset bytes.
    public var assetsPath = ".stadiumcloud/assets"
    /// Largest asset accepted, checked before bytes are stored.
    public var maxAssetBytes: Int64 = 100 * 1024 * 1024
    /// Bytes of assets one database (one account) may store.
    public var accountQuotaBytes: Int64 = 10 * 1024 * 1024 * 1024
    /// How long an asset no record references is kept before the collector removes it (longer than a receipt lives).
    public var unreferencedAssetGraceSeconds = 48 * 3600
    /// How often the collector runs.
    public var assetCollectionInterval: Duration = .seconds(3600)
    /// How long an upload URL, a receipt and a download URL stay valid.
    public var uploadURLLifetimeSeconds = 15 * 60
    public var receiptLifetimeSeconds = 24 * 3600
    public var downloadURLLifetimeSeconds = 3600

    public init() {}
}
