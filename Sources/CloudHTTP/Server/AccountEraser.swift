import CloudAssets
import CloudPostgres
import Logging

/// Erases an account, its data and the bytes of its assets (docs/PRIVACY.md): what `stadiumcloud accounts delete`
/// runs. Its sessions end first, so this process refuses them at once and the others within a second, before
/// anything is removed. Nil when no account has that name.
public func eraseAccount(
    _ name: String, records: RecordStore, credentials: CredentialStore, assets: any AssetStore, logger: Logger
) async throws -> AccountErasure? {
    guard try await credentials.endSessions(accountName: name, logger: logger) != nil else { return nil }
    return try await records.eraseAccount(name: name, logger: logger) { databaseID, checksum in
        try await assets.remove(owner: assetOwner(databaseID: databaseID), checksum: checksum)
    }
}
