// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "StadiumCloud",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "stadiumcloud", targets: ["stadiumcloud"]),
        .executable(name: "stadiumcloud-client", targets: ["stadiumcloud-client"]),
        .library(name: "StadiumCloudClient", targets: ["StadiumCloudClient", "CloudSync"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
    ],
    targets: [
        /// Domain: records, field values, zones, change pages, change tokens, errors, archives. Foundation, Crypto, zlib and
        /// swift-log only.
        .target(
            name: "CloudCore",
            dependencies: ["CZlib", .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log")]
        ),
        /// The server's in-process runtime, never linked by devices: its clock, the change feed that wakes waiting
        /// requests, reads shared by concurrent requests, the database deadline and batched flushes.
        .target(name: "CloudRuntime", dependencies: ["CloudCore"]),
        /// Every line of SQL: migrations, record store, change log, accounts, credentials (scrypt, P-256 keys).
        .target(
            name: "CloudPostgres",
            dependencies: [
                "CloudCore",
                "CloudRuntime",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        /// Asset bytes: streamed partial uploads, SHA-256, atomic content-addressed blobs, on disk or in an
        /// S3-compatible bucket (Signature V4 over AsyncHTTPClient).
        .target(
            name: "CloudAssets",
            dependencies: [
                "CloudCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
            ]
        ),
        /// The system's zlib, for gzip response compression.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        /// The CloudKit Web Services routes, auth, wire encoding and error mapping.
        .target(
            name: "CloudHTTP",
            dependencies: [
                "CloudAssets",
                "CloudCore",
                "CloudPostgres",
                "CloudRuntime",
                "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Resources/openapi.yaml")]
        ),
        /// Sports rules the server and the devices share, pure and without I/O: achievements, trip polls.
        .target(name: "SportsDomain", dependencies: ["CloudCore"]),
        /// The sports layer: the SportsTime dataset, canonical import with the merge, identity and proximity.
        .target(
            name: "Canon",
            dependencies: [
                "CloudCore",
                "CloudPostgres",
                "CloudRuntime",
                "SportsDomain",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        /// The score feeds: provider adapters (ESPN, MLB Stats API, NHL web API, NBA CDN), matching to canonical games,
        /// and the poller that writes live states into the season zones (docs/FEEDS.md).
        .target(
            name: "Feeds",
            dependencies: [
                "Canon",
                "CloudCore",
                "CloudPostgres",
                "CloudRuntime",
                "SportsDomain",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "stadiumcloud",
            dependencies: [
                "Canon",
                "Feeds",
                "CloudAssets",
                "CloudCore",
                "CloudHTTP",
                "CloudPostgres",
                "CloudRuntime",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        /// The device side, without sports words: CloudKit WS calls over URLSession, the SQLite local store (GRDB),
        /// the sync loop and asset transfers. Depends on CloudCore only, never on server modules.
        .target(
            name: "CloudSync",
            dependencies: [
                "CloudCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        /// The SportsTime client SDK: visits, photos and stadium preferences on top of CloudSync.
        .target(
            name: "StadiumCloudClient",
            dependencies: ["CloudCore", "CloudSync", "SportsDomain", .product(name: "Crypto", package: "swift-crypto")]
        ),
        /// The device CLI: sign in, sync, visits, photos.
        .executableTarget(
            name: "stadiumcloud-client",
            dependencies: [
                "CloudCore",
                "CloudSync",
                "SportsDomain",
                "StadiumCloudClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        /// The benchmark (bench/README.md): the running server against raw PostgreSQL on the same database.
        .executableTarget(
            name: "stadiumcloud-bench",
            dependencies: [
                "Canon",
                "CloudCore",
                "CloudHTTP",
                "CloudPostgres",
                "SportsDomain",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "bench/Sources"
        ),
        /// The hot path's floor (bench/hotpath.sh): Hummingbird and the same pool answering one `SELECT 1`.
        .executableTarget(
            name: "stadiumcloud-floor",
            dependencies: [
                "CloudPostgres", .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "bench/Floor"
        ),
        /// The client SDK benchmark (bench/README.md): first sync, push and pull against the same plain HTTP requests.
        .executableTarget(
            name: "stadiumcloud-client-bench",
            dependencies: ["CloudCore", "CloudSync", "StadiumCloudClient"],
            path: "bench/Client"
        ),
        .testTarget(name: "CloudCoreTests", dependencies: ["CloudCore"]),
        .testTarget(name: "CloudRuntimeTests", dependencies: ["CloudCore", "CloudRuntime"]),
        .testTarget(name: "CanonTests", dependencies: ["Canon", "CloudCore", "SportsDomain"]),
        .testTarget(name: "FeedsTests", dependencies: ["CloudCore", "Feeds", "SportsDomain"]),
        .testTarget(name: "CloudAssetsTests", dependencies: ["CloudAssets", "CloudCore", .product(name: "Logging", package: "swift-log")]),
        /// The device's sync loop offline, through the `HTTPTransport` seam: no server, no PostgreSQL.
        .testTarget(name: "CloudSyncTests", dependencies: ["CloudCore", "CloudSync"]),
        .testTarget(
            name: "CloudServerTests",
            dependencies: [
                "Canon",
                "Feeds",
                "CloudAssets",
                "CloudCore",
                "CloudPostgres",
                "CloudHTTP",
                "CloudRuntime",
                "CloudSync",
                "SportsDomain",
                "StadiumCloudClient",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
            ]
        ),
    ]
)

// Every module a file uses is imported by that file, and every import is a declared dependency (SE-0444).
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("MemberImportVisibility")]
}
