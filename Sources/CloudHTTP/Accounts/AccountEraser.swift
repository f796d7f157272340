import CloudAssets
import CloudPostgres
import Logging

/// Erases an account, its data, the bytes of its assets and of its uploads in progress, and its rate buckets
/// (docs/PRIVACY.md): what `stadiumcloud accounts delete` runs. Its sessions end first, so this process refuses them at
/// once and the others within a second, before anything is removed. Nil when no account has that name.
public func eraseAccount(
    _ name: String, records: RecordStore, credentials: CredentialStore, assets: any AssetStore, logger: Logger
) async throws -> AccountErasure? {
    try await eraseAccount(name, records: records, credentials: credentials, assets: assets, limiter: nil, logger: logger)
}

/// The same, from a serving process (the console, `users/delete`): its own unshared counts of the account go too.
func eraseAccount(
    _ name: String, records: RecordStore, credentials: CredentialStore, assets: any AssetStore, limiter: RateLimiter?, logger: Logger
) async throws -> AccountErasure? {
    guard try await credentials.endSessions(accountName: name, logger: logger) != nil,
        let erased = try await records.eraseAccount(name: name, logger: logger, removeBlob: { databaseID, checksum in
            try await assets.remove(owner: assetOwner(databaseID: databaseID), checksum: checksum)
        })
    else { return nil }
    // A count another process shares in the same instant can bring a bucket back; it names no one and goes when idle
    // for an hour.
    let keys = RateLimitKeys.of(erased.account)
    limiter?.forget(keys)
    try await credentials.deleteSharedBuckets(keys, logger: logger)
    // Uploads in progress: their bytes go now, not with the 24 h sweep of abandoned uploads.
    for databaseID in erased.databaseIDs {
        do { try await assets.discardUploads(prefix: assetOwner(databaseID: databaseID) + "-") } catch {
            logger.warning("an erased account's partial uploads stay until the sweep of abandoned uploads", metadata: ["error": "\(error)"])
        }
    }
    return erased
}
