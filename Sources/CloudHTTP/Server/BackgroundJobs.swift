import CloudAssets
import CloudCore
import CloudRuntime
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
        await runPeriodically(every: self.interval, on: self.clock) {
            // One process purges at a time; the others skip this round.
            await recordedRun(of: "tombstone-purge", records: self.records, clock: self.clock, logger: self.logger) {
                let cutoff = self.clock.now - self.retention.milliseconds
                let purged = try await self.records.purgeTombstones(olderThanMs: cutoff, logger: self.logger)
                try await self.credentials.purgeExpired(signatureWindowMs: self.signatureWindowMs, logger: self.logger)
                try await self.records.purgeIdempotentWrites(olderThanMs: self.clock.now - 86_400_000, logger: self.logger)
                try await self.records.purgeExpiredCourierTokens(logger: self.logger)
                self.logger.info("purged tombstones", metadata: ["records": "\(purged.records)", "zones": "\(purged.zones)"])
                return "\(purged.records) record and \(purged.zones) zone tombstone(s) older than \(ConsoleFormat.date(cutoff)) purged"
            }
        }
    }
}

/// Runs `job` in the one process that holds its lock (the others skip the round) and keeps its outcome as the
/// job's last run for the console; a failure is logged, and kept without its details.
func recordedRun(of name: String, records: RecordStore, clock: ServerClock, logger: Logger, _ job: () async throws -> String) async {
    let started = clock.now
    var outcome: String?
    var succeeded = true
    do {
        outcome = try await records.exclusively(name, logger: logger) { try await job() }
    } catch {
        logger.error("\(name) failed: \(String(reflecting: error))")
        outcome = "failed: see the server's log"
        succeeded = false
    }
    guard let outcome else { return }
    do {
        try await records.recordJobRun(
            JobRun(job: name, startedMs: started, endedMs: clock.now, outcome: outcome, succeeded: succeeded), logger: logger)
    } catch {
        logger.warning("\(name): its run could not be recorded: \(String(reflecting: error))")
    }
}

/// Runs `job` every `interval` of `clock` until graceful shutdown. Shutdown cancels the wait, never a job in progress:
/// a job that has started finishes before the process exits (within `serve --shutdown-grace-seconds`).
func runPeriodically(every interval: Duration, on clock: ServerClock, _ job: () async -> Void) async {
    while !Task.isShuttingDownGracefully, !Task.isCancelled {
        do {
            try await cancelWhenGracefulShutdown { try await clock.sleep(for: interval) }
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
        await runPeriodically(every: self.configuration.assetCollectionInterval, on: self.configuration.clock) {
            await recordedRun(of: "asset-collector", records: self.records, clock: self.configuration.clock, logger: self.logger) {
                try await self.collect()
            }
        }
    }

    /// Collects once; returns the figures.
    @discardableResult
    func collect() async throws -> String {
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
        return "\(removed) unreferenced asset(s), \(partials) abandoned partial upload(s) and \(orphans) orphaned blob(s) removed"
    }
}
