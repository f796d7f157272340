import CloudAssets
import CloudCore
import CloudPostgres
import Logging
import ServiceLifecycle

/// Removes tombstones older than the retention, credentials that can no longer be used and idempotency answers
/// older than a day, on an interval.
struct TombstonePurgeService: Service {
    let records: RecordStore
    let credentials: CredentialStore
    let signatureWindowMs: Int64
    let retention: Duration
    let interval: Duration
    let clock: ServerClock
    let logger: Logger

    func run() async throws {
        await runPeriodically(every: self.interval) {
            let cutoff = self.clock.now - self.retention.milliseconds
            do {
                // One process purges at a time; the others skip this round.
                try await self.records.exclusively("tombstone-purge", logger: self.logger) {
                    let purged = try await self.records.purgeTombstones(olderThanMs: cutoff, logger: self.logger)
                    try await self.credentials.purgeExpired(signatureWindowMs: self.signatureWindowMs, logger: self.logger)
                    try await self.records.purgeIdempotentWrites(olderThanMs: self.clock.now - 86_400_000, logger: self.logger)
                    try await self.records.purgeExpiredCourierTokens(logger: self.logger)
                    self.logger.info("purged tombstones", metadata: ["records": "\(purged.records)", "zones": "\(purged.zones)"])
                }
            } catch {
                self.logger.error("tombstone purge failed: \(String(reflecting: error))")
            }
        }
    }
}

/// Runs `job` every `interval` until graceful shutdown. Shutdown cancels the wait, never a job in progress: a
/// job that has started finishes before the process exits (within `serve --shutdown-grace-seconds`).
func runPeriodically(every interval: Duration, _ job: () async -> Void) async {
    while !Task.isShuttingDownGracefully, !Task.isCancelled {
        do {
            try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        } catch {
            return
        }
        await job()
    }
}

/// Removes asset bytes no record references once they are older than the grace period, and partial uploads
/// abandoned for a day.
struct AssetCollectorService: Service {
    let records: RecordStore
    let assets: any AssetStore
    let configuration: ServerConfiguration
    let logger: Logger

    func run() async throws {
        await runPeriodically(every: self.configuration.assetCollectionInterval) {
            do {
                // One process collects at a time; the others skip this round.
                try await self.records.exclusively("asset-collector", logger: self.logger) { try await self.collect() }
            } catch {
                self.logger.error("asset collection failed: \(String(reflecting: error))")
            }
        }
    }

    func collect() async throws {
        let cutoff = self.configuration.clock.now - Int64(self.configuration.unreferencedAssetGraceSeconds) * 1000
        let removed = try await self.records.collectUnreferencedAssets(storedBeforeMs: cutoff, logger: self.logger) { databaseID, checksum in
            try await self.assets.remove(owner: assetOwner(databaseID: databaseID), checksum: checksum)
        }
        let partials = try await self.assets.removePartialUploads(olderThan: 24 * 3600)
        // Bytes a crash left between publishing and committing their row (docs/RELIABILITY.md).
        let old = try await self.assets.blobs(olderThan: Double(self.configuration.unreferencedAssetGraceSeconds))
        let orphans = try await self.records.collectOrphanBlobs(
            old.compactMap { blob in databaseID(ofAssetOwner: blob.owner).map { ($0, blob.checksum) } }, logger: self.logger
        ) { databaseID, checksum in
            try await self.assets.remove(owner: assetOwner(databaseID: databaseID), checksum: checksum)
        }
        self.logger.info("collected assets", metadata: ["blobs": "\(removed)", "partials": "\(partials)", "orphans": "\(orphans)"])
    }
}
