import CloudAssets
import CloudCore
import Logging
import Testing

/// What only the S3 store does: answers when the bucket cannot be reached.
@Suite struct S3AssetStoreTests {
    @Test func anUnreachableBucketIsTryAgainLaterNotAnInternalError() async throws {
        // Port 1 on loopback refuses connections: the same answer as an S3 outage, without waiting for one.
        let location = try #require(try S3Location.parse("s3://gone?endpoint=http://127.0.0.1:1", environment: [:]))
        let store = S3AssetStore(
            location: location, credentials: AWSCredentials(accessKeyID: "k", secretAccessKey: "s"), logger: Logger(label: "test"))
        await #expect { try await store.uploadedLength(of: "up") } throws: {
            ($0 as? CloudError)?.code == .tryAgainLater && ($0 as? CloudError)?.retryAfter == 1
        }
        await #expect { try await store.size(owner: "db1", checksum: String(repeating: "a", count: 64)) } throws: {
            ($0 as? CloudError)?.code == .tryAgainLater
        }
    }
}
