import CloudCore
import Foundation

/// What a sync reports as it goes, for a progress line or a UI.
public enum SyncProgress: Sendable, Equatable {
    /// A page of a zone's changes was applied and its token saved.
    case fetched(scope: DatabaseScope, zone: String, records: Int, moreComing: Bool)
    /// The zone's token had expired: the device refetches the zone from the start.
    case zoneReset(scope: DatabaseScope, zone: String)
    /// A batch of queued edits was answered.
    case sent(records: Int, waiting: Int)
}

/// What one `sync()` did.
public struct SyncReport: Sendable, Equatable {
    /// Records that arrived new or changed, and records removed (tombstones, purged deletions).
    public var fetched = 0
    public var deleted = 0
    /// Queued edits the server accepted (saves and deletes).
    public var sent = 0
    /// Edits merged with a newer server version (CONFLICT/EXISTS) and sent again.
    public var merged = 0
    /// Edits dropped because another device deleted the record.
    public var dropped = 0
    /// Zones refetched from the start after CHANGE_TOKEN_EXPIRED.
    public var zonesReset: [String] = []
    /// Edits the server refused, with the reason; they wait for a new edit.
    public var refused: [String] = []
    /// Edits still queued (a later sync sends them).
    public var waiting = 0

    public init() {}
}

/// Tuning of the sync loop.
public struct SyncConfiguration: Sendable {
    /// The public zones a device follows.
    public var publicZones: [String] = [defaultZoneName]
    /// Operations per `records/modify` (CloudKit's limit is 200).
    public var batchSize = 200
    /// Changes per page of `changes/zone`.
    public var pageSize = 200
    /// Batches one sync sends at most, so a conflict that keeps coming back cannot loop for ever.
    public var maxBatches = 50
    /// Bytes per upload request and per ranged download request: the most an asset transfer holds in memory.
    public var chunkSize = 4 << 20
    /// Seconds one `changes/wait` is held by the server (below the transport's timeout).
    public var waitSeconds = 25
    /// Between syncs when the server cannot wait (an older server or a plain CloudKit endpoint): plain polling.
    public var pollInterval: Duration = .seconds(30)

    public init() {}
}

/// The device's sync loop, in the shape of CKSyncEngine: fetch database changes, then each changed zone's
/// changes page by page until `moreComing` is false (each page applied in one transaction with its token), then
/// send queued edits in batches with an `Idempotency-Key`, merging with the server's version on CONFLICT and
/// sending again. One sync at a time per device: a second `sync()` while one runs joins it.
public actor SyncEngine {
    public let service: CloudKitWebService
    public let store: LocalStore
    public private(set) var configuration: SyncConfiguration

    public init(service: CloudKitWebService, store: LocalStore, configuration: SyncConfiguration = SyncConfiguration()) {
        self.service = service
        self.store = store
        self.configuration = configuration
    }

    /// Follows these public zones from the next sync on; zones no longer followed are dropped from the device.
    public func follow(publicZones zones: [String]) throws {
        for zone in Set(self.configuration.publicZones).subtracting(zones) { try self.store.dropZone(scope: .public, zone: zone) }
        self.configuration.publicZones = zones
    }

    /// Starts the followed public zones that were never fetched from a signed snapshot (docs/SCALING.md, "Snapshots"),
    /// with no network: each gets the snapshot's records and change token, so the first sync fetches only what changed
    /// since. A zone this device already syncs is left as it is. Returns the records stored.
    @discardableResult
    public func bootstrap(from snapshot: PublicSnapshot) throws -> Int {
        let endpoint = self.service.endpoint
        guard snapshot.container == endpoint.container, snapshot.environment == endpoint.environment else {
            throw SyncError(
                code: ServerErrorCode.badRequest.rawValue,
                reason: "the snapshot is of \(snapshot.container) (\(snapshot.environment)), not of \(endpoint.container) (\(endpoint.environment))",
                status: 0)
        }
        var stored = 0
        for zone in snapshot.zones where self.configuration.publicZones.contains(zone.zoneName) {
            guard try self.store.token(scope: .public, zone: zone.zoneName) == nil else { continue }
            stored += try self.store.applyPage(scope: .public, zone: zone.zoneName, records: zone.records, token: zone.syncToken, moreComing: false).changed
        }
        return stored
    }

    /// The sync in progress: a second caller joins it instead of fetching the same pages again in parallel.
    var running: Task<SyncReport, any Error>?

    /// Fetches, then sends. Without a session only the public database is fetched.
    public func sync(progress: @escaping @Sendable (SyncProgress) -> Void = { _ in }) async throws -> SyncReport {
        if let running = self.running { return try await running.value }
        let task = Task { try await self.runSync(progress) }
        self.running = task
        defer { self.running = nil }
        return try await task.value
    }

    func runSync(_ progress: @Sendable (SyncProgress) -> Void) async throws -> SyncReport {
        var report = SyncReport()
        try await self.fetchZones(.public, self.configuration.publicZones, into: &report, progress)
        if try self.store.webAuthToken() != nil {
            try await self.fetchPrivateChanges(into: &report, progress)
            try await self.sendChanges(into: &report, progress)
        }
        report.waiting = try self.store.pendingCounts().waiting
        return report
    }

    /// `changes/database`, then the changed zones. The database token is saved only after every zone it names has
    /// been fetched, so a crash in between fetches those zones again instead of skipping them.
    func fetchPrivateChanges(into report: inout SyncReport, _ progress: @Sendable (SyncProgress) -> Void) async throws {
        var token = try self.store.token(scope: .private, zone: LocalStore.databaseTokenZone)
        var changed: Set<String> = [defaultZoneName]
        var deleted: Set<String> = []
        var complete = false
        while true {
            var body: [String: JSONValue] = ["resultsLimit": .int(Int64(self.configuration.pageSize))]
            if let token { body["syncToken"] = .string(token) }
            let answer: JSONValue
            do {
                answer = try await self.service.call(.private, "changes/database", .object(body))
            } catch let error as SyncError where token != nil && Self.startsOver(error.code) {
                token = nil
                complete = true
                continue
            }
            for zone in answer["zones"]?.arrayValue ?? [] {
                guard let name = zone["zoneID"]?["zoneName"]?.stringValue else { continue }
                if zone["deleted"]?.boolValue == true {
                    deleted.insert(name); changed.remove(name)
                } else {
                    changed.insert(name); deleted.remove(name)
                }
            }
            token = answer["syncToken"]?.stringValue
            if answer["moreComing"]?.boolValue != true { break }
        }
        // A full list (after an expired database token) also tells which known zones are gone.
        if complete { deleted.formUnion(Set(try self.store.knownZones(scope: .private)).subtracting(changed)) }
        for zone in deleted { try self.store.dropZone(scope: .private, zone: zone) }
        try await self.fetchZones(.private, changed.sorted(), into: &report, progress)
        try self.store.setDatabaseToken(token, scope: .private)
    }

    /// `changes/zone` for `zones` until none has more; a zone whose token expired starts over.
    func fetchZones(_ scope: DatabaseScope, _ zones: [String], into report: inout SyncReport, _ progress: @Sendable (SyncProgress) -> Void)
        async throws
    {
        var remaining = zones
        var resets: [String: Int] = [:]
        while !remaining.isEmpty {
            var entries: [JSONValue] = []
            for zone in remaining {
                var entry: [String: JSONValue] = ["zoneID": ["zoneName": .string(zone)], "resultsLimit": .int(Int64(self.configuration.pageSize))]
                if let token = try self.store.token(scope: scope, zone: zone) { entry["syncToken"] = .string(token) }
                entries.append(.object(entry))
            }
            let answer = try await self.service.call(scope, "changes/zone", ["zones": .array(entries)])
            var next: [String] = []
            for entry in answer["zones"]?.arrayValue ?? [] {
                guard let zone = entry["zoneID"]?["zoneName"]?.stringValue, remaining.contains(zone) else { continue }
                if let code = entry["serverErrorCode"]?.stringValue {
                    switch code {
                    case _ where try Self.startsOver(code) && resets[zone, default: 0] < 2 && self.store.token(scope: scope, zone: zone) != nil:
                        resets[zone, default: 0] += 1
                        try self.store.resetZone(scope: scope, zone: zone)
                        report.zonesReset.append(zone)
                        progress(.zoneReset(scope: scope, zone: zone))
                        next.append(zone)
                    case ServerErrorCode.zoneNotFound.rawValue:
                        try self.store.dropZone(scope: scope, zone: zone)
                    default:
                        throw SyncError(code: code, reason: entry["reason"]?.stringValue ?? "", status: 200)
                    }
                    continue
                }
                guard let token = entry["syncToken"]?.stringValue else { continue }
                let moreComing = entry["moreComing"]?.boolValue ?? false
                let records = entry["records"]?.arrayValue ?? []
                let applied = try self.store.applyPage(scope: scope, zone: zone, records: records, token: token, moreComing: moreComing)
                report.fetched += applied.changed
                report.deleted += applied.deleted
                progress(.fetched(scope: scope, zone: zone, records: records.count, moreComing: moreComing))
                if moreComing { next.append(zone) }
            }
            remaining = next
        }
    }

    /// Whether an answer to a fetch with a token means "fetch again without it": CHANGE_TOKEN_EXPIRED (tombstones
    /// purged, or a token of the database's history before a restore or failover), or BAD_REQUEST (the server cannot
    /// read the token: another installation's, or one it no longer signs). Queued edits stay and are sent after.
    static func startsOver(_ code: String) -> Bool {
        code == ServerErrorCode.changeTokenExpired.rawValue || code == ServerErrorCode.badRequest.rawValue
    }

    /// Sends queued edits, one batch at a time. A batch is saved before it is sent and resent byte for byte with
    /// the same `Idempotency-Key` until it is answered, so a lost answer never applies it twice.
    func sendChanges(into report: inout SyncReport, _ progress: @Sendable (SyncProgress) -> Void) async throws {
        var limit = self.configuration.batchSize
        for _ in 0..<self.configuration.maxBatches {
            guard let batch = try self.store.nextBatch(limit: limit) else { return }
            let answer: JSONValue
            do {
                answer = try await self.service.call(.private, "records/modify", body: batch.body, idempotencyKey: batch.idempotencyKey)
            } catch let error as SyncError where error.status == 400 || error.status == 413 {
                // The server refuses a whole request for one malformed record (nothing was written). Halve the
                // batch until that edit is alone, so the others still go; alone, it waits for the person to change it.
                if batch.entries.count > 1 {
                    try self.store.discardBatch()
                    limit = max(1, batch.entries.count / 2)
                } else {
                    try self.store.refuseBatch(batch, error: error)
                    report.refused.append("\(batch.entries[0].recordName): \(error.code): \(error.reason)")
                }
                continue
            }
            limit = min(self.configuration.batchSize, limit * 2)
            let outcome = try self.store.applyAnswer(answer, to: batch)
            if !outcome.needLookup.isEmpty {
                let found = try await self.service.call(
                    .private, "records/lookup",
                    [
                        "zoneID": ["zoneName": .string(batch.zone)], "records": .array(outcome.needLookup.map { ["recordName": .string($0)] }),
                    ])
                try self.store.merge(serverRecords: found["records"]?.arrayValue ?? [], zone: batch.zone)
            }
            report.sent += outcome.saved + outcome.deleted
            report.merged += outcome.merged + outcome.needLookup.count
            report.dropped += outcome.dropped
            report.refused += outcome.refused.map { "\($0.recordName): \($0.error)" }
            progress(.sent(records: batch.entries.count, waiting: try self.store.pendingCounts().waiting))
        }
    }

    // MARK: Live sync

    /// Waits until the server says that something this device follows changed after its tokens (`changes/wait`,
    /// docs/SYNC.md): the private database, when signed in, and the followed public zones, in one request. True when
    /// something did, false when the wait ran out. A device that made the change is woken too; its sync then
    /// finds its own edit and nothing else to do.
    public func waitForChanges() async throws -> Bool {
        var publicZones: [JSONValue] = []
        for zone in self.configuration.publicZones {
            var entry: [String: JSONValue] = ["zoneID": ["zoneName": .string(zone)]]
            if let token = try self.store.token(scope: .public, zone: zone) { entry["syncToken"] = .string(token) }
            publicZones.append(.object(entry))
        }
        let timeout = JSONValue.int(Int64(self.configuration.waitSeconds))
        let answer: JSONValue
        if try self.store.webAuthToken() != nil {
            var body: [String: JSONValue] = ["publicZones": .array(publicZones), "timeout": timeout]
            if let token = try self.store.token(scope: .private, zone: LocalStore.databaseTokenZone) { body["syncToken"] = .string(token) }
            answer = try await self.service.call(.private, "changes/wait", .object(body))
        } else {
            answer = try await self.service.call(.public, "changes/wait", ["zones": .array(publicZones), "timeout": timeout])
        }
        return answer["changed"]?.boolValue == true
    }

    /// Syncs whenever the server says something changed, until the task is cancelled: sync, wait, sync, … Where
    /// the server cannot wait (it answers `changes/wait` with an error other than throttling or a network failure),
    /// it polls every `pollInterval` instead. Each sync's report goes to `synced`; a failed sync is retried after
    /// `pollInterval` (the service already retried what could be retried). `using` is the app's own sync, when it
    /// does more than this engine's.
    public func syncContinuously(
        using sync: (@Sendable () async throws -> SyncReport)? = nil, synced: @escaping @Sendable (Result<SyncReport, any Error>) -> Void = { _ in }
    ) async {
        var canWait = true
        while !Task.isCancelled {
            do {
                let report = if let sync { try await sync() } else { try await self.sync() }
                synced(.success(report))
            } catch is CancellationError {
                return
            } catch {
                synced(.failure(error))
                do { try await Task.sleep(for: self.configuration.pollInterval) } catch { return }
                continue
            }
            if canWait {
                do {
                    _ = try await self.waitForChanges()
                    continue
                } catch is CancellationError {
                    return
                } catch let error as SyncError where error.status == 400 || error.status == 404 || error.status == 405 {
                    canWait = false
                } catch {
                    // Throttled or unreachable: wait a poll interval before syncing again.
                }
            }
            do { try await Task.sleep(for: self.configuration.pollInterval) } catch { return }
        }
    }
}
