import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Logging
import Synchronization

/// Imports the canonical dataset into a container's public database, in one transaction.
public struct CanonicalImporter: Sendable {
    public let records: RecordStore
    public let logger: Logger

    public init(records: RecordStore, logger: Logger) {
        self.records = records
        self.logger = logger
    }

    /// What one import changed, zone by zone: the entities in `_defaultZone`, each league-season of games in its
    /// own zone.
    public struct Outcome: Sendable {
        public var plans: [String: CanonicalImportPlan] = [:]

        /// Every change, default zone first, then the game zones by name.
        public var changes: [CanonicalImportPlan.Change] { self.zoneOrder.flatMap { self.plans[$0]!.changes } }
        /// One line per change, for `--dry-run` and the import log.
        public var report: [String] { self.zoneOrder.flatMap { self.plans[$0]!.report } }

        var zoneOrder: [String] { self.plans.keys.sorted { ($0 == defaultZoneName ? 0 : 1, $0) < ($1 == defaultZoneName ? 0 : 1, $1) } }
    }

    /// Merges `dataset` into the public database: entities into `_defaultZone`, the games of each league-season
    /// file into its zone (created on first import). A zone's records missing from its source are deprecated; a
    /// season whose file is not in `dataset` is left as it is. With `dryRun` nothing is written. Needs a deployed
    /// schema (field owners drive the merge).
    public func run(
        _ dataset: CanonicalDataset, container: String, environment: String, dryRun: Bool, progress: @Sendable (String) -> Void = { _ in }
    ) async throws -> Outcome {
        guard let schema = try await self.records.deployedSchema(in: SchemaScope(container: container, environment: environment), logger: self.logger)
        else {
            throw CanonError(
                "no schema is deployed to \(container) \(environment): run `stadiumcloud schema apply` (and `schema deploy` for production) first")
        }
        var sources = try dataset.gameRecords()
        sources[defaultZoneName] = try dataset.records()
        let sourceByZone = sources
        progress("read \(sources.values.map(\.count).reduce(0, +)) canonical records in \(sources.count) zone(s)")
        let database = try await self.records.database(
            container: container, environment: environment, scope: .public, owner: nil, logger: self.logger)
        let now = self.records.clock.now
        let stamp = ChangeStamp(timestamp: now, userRecordName: "_canonicalImport", deviceID: "stadiumcloud import")
        let outcome = Mutex(Outcome())
        let zones = sources.keys.sorted()
        let written = try await self.records.rewriteZones(zones, in: database, stamp: stamp, commit: !dryRun, logger: self.logger) { stored in
            progress("compared with \(stored.values.map(\.count).reduce(0, +)) stored records")
            var computed = Outcome()
            for zone in zones {
                computed.plans[zone] = try CanonicalImportPlan(source: sourceByZone[zone]!, stored: stored[zone] ?? [:], schema: schema, now: now)
            }
            outcome.withLock { $0 = computed }
            return computed.plans.mapValues(\.drafts)
        }
        progress(dryRun ? "dry run: nothing written" : "wrote \(written) record versions")
        return outcome.withLock { $0 }
    }
}
