import Crypto
import CloudCore
import CloudRuntime

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
    /// `https://sync.example.com` when a proxy terminates TLS: the base of every absolute URL handed out
    /// (upload, download, sign-in). Unset, it is `http://` plus the Host the client used.
    public var publicBaseURL: String?
    /// Containers served; any other gets NOT_FOUND, so stray names cannot create databases.
    public var containers: Set<String> = ["iCloud.com.sportstime.app"]
    /// How long a database request may wait (mostly for a connection while PostgreSQL is away) before it is
    /// answered 503 TRY_AGAIN_LATER.
    public var databaseTimeout: Duration = .seconds(10)
    /// Whether writes in development add the record types and fields they use to the schema (`serve
    /// --no-just-in-time-schema` turns it off; production is always strict).
    public var justInTimeSchema = true
    public var auth = AuthConfiguration()
    public var live = LiveConfiguration()
    public var connections = ConnectionLimits()
    /// Origins of web apps that may call the server from a browser (CORS, and the sign-in popup's message): exact
    /// `scheme://host[:port]`; none by default (docs/AUTH.md, "Web apps").
    public var webOrigins: Set<String> = []
    public var rateLimits = RateLimits()
    public var limits = RecordLimits()
    /// Where asset bytes live: a folder (`FileAssetStore`) or `s3://bucket[/prefix]?endpoint=…` (`S3AssetStore`).
    public var assets = ".stadiumcloud/assets"
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
    /// How long SIGTERM lets in-flight requests and jobs finish before they are cancelled.
    public var shutdownGrace: Duration = .seconds(30)
    /// The time the server goes by (URL and token lifetimes, change stamps, deadlines); tests move their own.
    public var clock = ServerClock.system
    /// Changes tests wait on instead of polling; nothing in the server waits on them.
    public var signals = Signals()

    public struct Signals: Sendable {
        /// A connection left and its place is free again (`connections.maximum`).
        public var connectionPlaceFreed = StateSignal()
        /// A console import made progress or ended.
        public var consoleImport = StateSignal()

        public init() {}
    }
    /// What the cacheable public reads sign their answers with, and the snapshot they send expired positions to
    /// (docs/SCALING.md, "Caches in front").
    public var publicSnapshots = PublicSnapshotConfiguration()

    public init() {}
}

/// Sign-in sessions, web auth token rotation and server-to-server signatures (docs/AUTH.md).
public struct AuthConfiguration: Sendable {
    /// A web auth token's idle lifetime: CloudKit's 30 minutes, or 2 weeks with "keep me signed in".
    public var sessionIdleSeconds = 30 * 60
    public var keepSignedInSeconds = 14 * 24 * 3600
    /// How long a token stays valid after the token that replaced it was first used.
    public var rotationGraceSeconds = 120
    /// Allowed clock difference for server-to-server signatures, either way.
    public var signatureWindowSeconds = 600
    /// URL prefixes the sign-in page may hand a token to (`sportstime://signin`); others are refused, so a
    /// crafted link cannot send someone's token to a stranger.
    public var signInCallbackPrefixes: [String] = []
    /// scrypt cost (log2 N) for new password hashes (tests lower it: a hash at 15 takes about 100 ms).
    public var passwordHashLog2Rounds = 15

    public init() {}
}

/// A token bucket: `perSecond` sustained, `burst` at once.
public struct RateLimit: Sendable {
    public var perSecond: Double
    public var burst: Double

    public init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }
}

/// Request budgets, decided in memory and shared through the database unless `shared` is off; exceeding one
/// answers 503 THROTTLED with `retryAfter`.
public struct RateLimits: Sendable {
    /// One container API token is shared by every install of an app: high, a guard against a runaway client.
    public var perAPIToken = RateLimit(perSecond: 500, burst: 2000)
    public var perAccount = RateLimit(perSecond: 20, burst: 200)
    public var perServerKey = RateLimit(perSecond: 50, burst: 500)
    /// Records one person may create or change in the public database, where everyone sees them: a guard against
    /// spam, far above what planning trips with friends needs.
    public var publicWritesPerAccount = RateLimit(perSecond: 0.5, burst: 60)
    /// Password guesses against one account name.
    public var signInPerAccount = RateLimit(perSecond: 0.1, burst: 10)
    /// Every sign-in attempt together: each costs a scrypt hash.
    public var signInTotal = RateLimit(perSecond: 5, burst: 20)
    /// Whether budgets are shared by every process on the database (counts added to it 4 times a second) or kept
    /// per process (one process: no database writes for rate limits at all).
    public var shared = true

    public init() {}
}

/// Live sync: `changes/wait`, subscriptions and the web courier (docs/SYNC.md).
public struct LiveConfiguration: Sendable {
    /// Waiting requests per process and per account; past them, 503 THROTTLED.
    public var waiters = ChangeFeed.Limits()
    /// The longest a `changes/wait` or a courier poll is held (CouchDB's longpoll also stops at 60 s).
    public var maxWaitSeconds = 60
    /// How long a courier poll is held when the client does not say.
    public var courierWaitSeconds = 30
    /// Lifetime of a push token from `tokens/create` (CloudKit JS asks for 12 hours).
    public var pushTokenLifetimeSeconds = 12 * 3600
    /// Subscriptions per account and database.
    public var maxSubscriptions = 100

    public init() {}
}

/// What one connection may hold, and how many the process keeps (docs/RELIABILITY.md, "Connections").
public struct ConnectionLimits: Sendable {
    /// Open connections; past it a new one is answered 503 TRY_AGAIN_LATER and closed. `serve` lowers it to what the
    /// open-file limit leaves room for (`maximum(underOpenFileLimit:)`).
    public var maximum = 10_000
    /// From connecting to the end of the first request head.
    public var headTimeout: Duration = .seconds(10)
    /// Without a byte read while no request is being answered (between keep-alive requests, or a request head or
    /// body that stalls). A long poll being answered is not idle.
    public var idleTimeout: Duration = .seconds(75)
    /// Open connections from one client (an IPv4 address, an IPv6 /64); past it a new one is answered 503 THROTTLED and
    /// closed, so one host cannot take every place. 0: no cap.
    public var maximumPerAddress = 256
    /// Addresses the per-client cap leaves alone: a proxy on the same machine (deploy/nginx) connects from these,
    /// carrying every client, and caps clients itself.
    public var uncappedAddresses: Set<String> = ["127.0.0.1", "::1"]
    /// The pace of request bodies: JSON, sign-in forms. A body is read before authentication (a server-to-server
    /// signature covers it), so this is what keeps an unauthenticated trickle from holding a connection.
    public var body = BodyPace(deadline: .seconds(60), minimumBytesPerSecond: 1000)
    /// The pace of uploads (`/assets/upload/…`, the console's dataset), larger and resumable.
    public var uploadBody = BodyPace(deadline: .seconds(3600), minimumBytesPerSecond: 1000)

    public init() {}
}

/// Every connection holds a file descriptor, so the process's open-file limit bounds `maximum`.
extension ConnectionLimits {
    /// Descriptors kept beside the connections' own: PostgreSQL's (a pool of at most 20 and the change listener),
    /// asset files being written or read, logs and the listening socket.
    public static let reservedOpenFiles = 128

    /// The open-file limit `maximum` connections need: one descriptor each, and the reserve.
    public var openFilesNeeded: Int { self.maximum + Self.reservedOpenFiles }

    /// `maximum`, lowered to what an open-file limit of `limit` leaves room for: the limit less the reserve, or half
    /// of a limit too small to hold the reserve twice.
    public func maximum(underOpenFileLimit limit: Int) -> Int {
        min(self.maximum, limit > Self.reservedOpenFiles * 2 ? limit - Self.reservedOpenFiles : limit / 2)
    }

    /// What `serve` warns at start when the open-file limit (the hard one, which it raises its soft one to) is below
    /// what `maximum` connections need; nil when it is not.
    public func openFileLimitWarning(limit: Int) -> String? {
        guard limit < self.openFilesNeeded else { return nil }
        return
            "the open-file limit (\(limit), the hard one) is below the \(self.openFilesNeeded) descriptors --max-connections \(self.maximum) needs "
            + "(one a connection, \(Self.reservedOpenFiles) for PostgreSQL, asset files and logs): at most "
            + "\(self.maximum(underOpenFileLimit: limit)) connections are kept; raise the hard limit (LimitNOFILE= in the service's unit, "
            + "ulimit -Hn) or lower --max-connections"
    }
}

/// How fast a request body must come (docs/RELIABILITY.md, "Connections"): whole within `deadline` of its head, and at
/// `minimumBytesPerSecond` on average, with `slack` seconds of credit (a pause up to it is fine, a trickle slower than
/// the rate is cut within about it). 0 bytes a second: no minimum. Time the server itself does not read (its handler
/// has not taken what came) does not count.
public struct BodyPace: Sendable {
    public var deadline: Duration
    public var minimumBytesPerSecond: Int
    public var slack: Duration = .seconds(10)

    public init(deadline: Duration, minimumBytesPerSecond: Int, slack: Duration = .seconds(10)) {
        (self.deadline, self.minimumBytesPerSecond, self.slack) = (deadline, minimumBytesPerSecond, slack)
    }
}

/// The signing key of the cacheable public reads' answers (the one `stadiumcloud snapshot make` signs with, so the app
/// trusts one key), and the snapshot file `GET /public/1/…/snapshot` serves. Both optional.
public struct PublicSnapshotConfiguration: Sendable {
    public var signingKey: P256.Signing.PrivateKey?
    public var file: String?

    public init(signingKey: P256.Signing.PrivateKey? = nil, file: String? = nil) {
        self.signingKey = signingKey
        self.file = file
    }
}
