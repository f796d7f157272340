import CloudCore
import CloudPostgres
import Foundation
import Logging

/// Imports the canonical dataset into a container's public database, in one transaction.
public struct CanonicalImporter: Sendable {
    public let records: RecordStore
    public let logger: Logger

    public init(records: RecordStore, logger: Logger) {
        self.records = records
        self.logger = logger
    }

    /// Merges `dataset` into the public default zone. With `dryRun` the plan is computed and nothing is written.
    /// Needs a deployed schema (field owners drive the merge).
    public func run(
        _ dataset: CanonicalDataset, container: String, environment: String, dryRun: Bool, progress: @Sendable (String) -> Void = { _ in }
    ) async throws -> CanonicalImportPlan {
        guard let schema = try await self.records.deployedSchema(logger: self.logger) else {
            throw CanonError("no schema is deployed: run `stadiumcloud schema apply` first")
        }
        let source = try dataset.records()
        progress("read \(source.count) canonical records")
        let database = try await self.records.database(
            container: container, environment: environment, scope: .public, owner: nil, logger: self.logger)
        let now = Timestamp.now
        let stamp = ChangeStamp(timestamp: now, userRecordName: "_canonicalImport", deviceID: "stadiumcloud import")
        let plan = Mutex<CanonicalImportPlan?>(nil)
        let written = try await self.records.rewriteZone(defaultZoneName, in: database, stamp: stamp, commit: !dryRun, logger: self.logger) {
            stored in
            progress("compared with \(stored.count) stored records")
            let computed = try CanonicalImportPlan(source: source, stored: stored, schema: schema, now: now)
            plan.withLock { $0 = computed }
            return computed.drafts
        }
        progress(dryRun ? "dry run: nothing written" : "wrote \(written) record versions")
        return plan.withLock { $0 }!
    }
}

import Synchronization
