import CloudCore
import CloudRuntime
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Owns every line of SQL about databases, zones and records. Each write is one transaction that holds the
/// database's row lock from the moment its change numbers are stored until it commits (a record write may plan
/// without the lock, then stores only if the counter has not moved; record writes that arrive together share one
/// transaction), so change numbers commit in one order (docs/SYNC.md).
public final class RecordStore: Sendable {
    let client: PostgresPool

    /// Since when and why PostgreSQL does not answer, for `/ready`; nil while it does.
    public var databaseOutage: PostgresPool.Outage? { self.client.outage }
    public let signer: TokenSigner
    public let limits: RecordLimits
    /// The time stamped on zones, assets and kept answers.
    public let clock: ServerClock
    let databaseIDs = Mutex<[DatabaseKey: Int64]>([:])
    /// Wakes the requests waiting for changes, in this process and the others, after each committed write.
    public let changes: ChangeBroadcast
    /// Concurrent polls share the read of their zones' heads.
    let zoneHeads = CoalescedReads<ZoneHeads.Key, ZoneHeads.Head>()
    /// Concurrent readers of one record share its read (`sharedLookup`).
    let sharedLookups = CoalescedReads<SharedLookupKey, RecordSnapshot>()
    /// Deployed schemas by version, so a write re-reads only its version number.
    let schemaCache = Mutex<[Int32: Schema]>([:])
    /// Whether a write in a development environment may add record types and fields to its schema (CloudKit's
    /// just-in-time schema); production never does.
    public let justInTimeSchema: Bool
    /// Optimistic writes that another write overtook and that were written again under the lock (RecordStore+Modify).
    public var writesRetriedUnderLock: Int { self.retriedUnderLock.load(ordering: .relaxed) }
    let retriedUnderLock = Atomic<Int>(0)
    /// Concurrent writes of one database share a transaction and its commit (RecordStore+Modify).
    let groupCommit = GroupCommit<Int64, WriteBatch, ModifyResult>()
    /// Writes that arrive while one runs share the next commit (`GroupCommit`), by lane: a database's writes always
    /// take the same lane, and lanes run side by side, so one slow group holds back a lane's writes, not all. But the
    /// fewer the lanes, the more batches share a group's statements and commit: 32 accounts saving at once on 2 cores
    /// cost PostgreSQL 300–410 µs a save with 4 lanes, 150 with 2, 110–120 with 1 (bench/README.md, "Writes"). One
    /// lane per core, so as many groups run as the cores can serve, and at most 4.
    static let writeLanes = Int64(min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 4))
    /// Writes that shared a transaction with others of their database.
    public var writesWrittenTogether: Int { self.writtenTogether.load(ordering: .relaxed) }
    let writtenTogether = Atomic<Int>(0)

    struct DatabaseKey: Hashable {
        var container: String
        var environment: String
        var scope: DatabaseScope
        var ownerAccountID: Int64?
    }

    public init(
        client: PostgresPool, signer: TokenSigner, limits: RecordLimits = RecordLimits(), clock: ServerClock = .system,
        feed: ChangeFeed = ChangeFeed(), justInTimeSchema: Bool = true
    ) {
        self.client = client
        self.justInTimeSchema = justInTimeSchema
        self.signer = signer
        self.limits = limits
        self.clock = clock
        self.changes = ChangeBroadcast(client: client, feed: feed, logger: Logger(label: "stadiumcloud.changes"))
        // After a restore or failover, ids name other things: what this process remembers of the lost history goes,
        // and long polls end so that their clients ask again, authenticated afresh.
        client.history.onFork { [weak self] in
            self?.databaseIDs.withLock { $0.removeAll() }
            self?.schemaCache.withLock { $0.removeAll() }
            feed.endAll()
        }
    }

    /// Which history of the database this store serves (docs/SYNC.md, "Restores and failovers").
    public var history: DatabaseHistory { self.client.history }

    /// The migrations not yet applied (what `/ready` reports): empty when the database is current.
    public func pendingMigrations(_ migrations: [Migration], logger: Logger) async throws -> [MigrationStatus] {
        try await Migrator(client: self.client, migrations: migrations, logger: logger).pending()
    }

    // MARK: Databases and zones

    /// Finds or creates the database (and its default zone) for a container, environment, scope and owner.
    public func database(
        container: String, environment: String, scope: DatabaseScope, owner: Account?, logger: Logger
    ) async throws -> DatabaseRef {
        let key = DatabaseKey(container: container, environment: environment, scope: scope, ownerAccountID: owner?.id)
        let ownerName = owner?.userRecordName ?? "_defaultOwner"
        if let id = self.databaseIDs.withLock({ $0[key] }) {
            return DatabaseRef(id: id, scope: scope, ownerRecordName: ownerName)
        }
        let id: Int64
        do {
            id = try await self.findOrCreateDatabase(container: container, environment: environment, scope: scope, owner: owner, logger: logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23503" {
            // No account row to own it: erased since the request was authenticated.
            throw CloudError.accountErased
        }
        self.databaseIDs.withLock { $0[key] = id }
        return DatabaseRef(id: id, scope: scope, ownerRecordName: ownerName)
    }

    private func findOrCreateDatabase(
        container: String, environment: String, scope: DatabaseScope, owner: Account?, logger: Logger
    ) async throws -> Int64 {
        try await self.client.transaction(logger: logger) { connection -> Int64 in
            try await self.findOrCreateDatabase(
                container: container, environment: environment, scope: scope, owner: owner, on: connection, logger: logger)
        }
    }

    /// The database's id, created with its default zone inside the caller's transaction when there is none.
    func findOrCreateDatabase(
        container: String, environment: String, scope: DatabaseScope, owner: Account?, on connection: PostgresConnection, logger: Logger
    ) async throws -> Int64 {
        let inserted = try await connection.query(
            """
            INSERT INTO databases (container, environment, scope, owner_account_id)
            VALUES (\(container), \(environment), \(scope.rawValue), \(owner?.id))
            ON CONFLICT (container, environment, scope, owner_account_id) DO NOTHING RETURNING id
            """, logger: logger)
        for try await id in inserted.decode(Int64.self) {
            try await connection.query(
                "INSERT INTO zones (database_id, zone_name, change_seq, modified_ms) VALUES (\(id), \(defaultZoneName), 0, \(self.clock.now))",
                logger: logger)
            return id
        }
        let existing = try await connection.query(
            """
            SELECT id FROM databases WHERE container = \(container) AND environment = \(environment)
            AND scope = \(scope.rawValue) AND owner_account_id IS NOT DISTINCT FROM \(owner?.id)
            """, logger: logger)
        for try await id in existing.decode(Int64.self) { return id }
        throw CloudError.accountErased
    }

    /// The live zone's internal id, or ZONE_NOT_FOUND.
    func zoneID(named name: String, in database: DatabaseRef, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        let rows = try await connection.query(
            "SELECT id FROM zones WHERE database_id = \(database.id) AND zone_name = \(name) AND NOT deleted", logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw CloudError.zoneNotFound(name)
    }

    // MARK: records/lookup

    /// The live records with these names, each limited to its desired keys, in request order; `nil` for a name that
    /// does not exist. One query per distinct key list (clients send one list, or the same list per record).
    public func lookup(
        _ wanted: [(name: String, desiredKeys: [String]?)], zoneName: String, in database: DatabaseRef, logger: Logger
    ) async throws -> [RecordSnapshot?] {
        try await self.client.reading { connection in
            if wanted.count == 1 {
                return [try await self.lookup(wanted[0], zoneName: zoneName, inDatabase: database.id, on: connection, logger: logger)]
            }
            let zoneID = try await self.zoneID(named: zoneName, in: database, on: connection, logger: logger)
            var answers = [RecordSnapshot?](repeating: nil, count: wanted.count)
            for (keys, indices) in Dictionary(grouping: wanted.indices, by: { wanted[$0].desiredKeys }) {
                var builder = SQLBuilder()
                let columns = Self.recordColumns(&builder, desiredKeys: keys)
                let names = indices.map { wanted[$0].name }
                builder.append(
                    "SELECT \(columns) FROM \(Self.recordsNamed(builder.bind(names), inZone: builder.bind(zoneID))) r WHERE NOT r.deleted"
                )
                var found: [ExactName: RecordSnapshot] = [:]
                for try await row in try await connection.query(builder.query, logger: logger) {
                    let record = try Self.snapshot(row)
                    found[ExactName(record.recordName)] = record
                }
                for index in indices { answers[index] = found[ExactName(wanted[index].name)] }
            }
            return answers
        }
    }
}

extension RecordStore {
    /// One live record (nil: none), from a read that started after this call and answers every concurrent reader of
    /// the same record (`CoalescedReads`): a write rule reads its trip poll for every vote, and people voting at once
    /// need one read of it, not one each. ZONE_NOT_FOUND when the zone does not exist.
    public func sharedLookup(
        _ name: String, desiredKeys: [String]?, zoneName: String, in database: DatabaseRef, logger: Logger
    ) async throws -> RecordSnapshot? {
        let key = SharedLookupKey(databaseID: database.id, zoneName: ExactName(zoneName), name: ExactName(name), desiredKeys: desiredKeys)
        return try await self.sharedLookups.read(key) { keys in
            // A zone that is gone fails the read, and each reader then reads alone (CoalescedReads) and gets its error.
            try await self.client.reading { connection in
                var found: [SharedLookupKey: RecordSnapshot] = [:]
                for key in keys {
                    found[key] = try await self.lookup(
                        (key.name.text, key.desiredKeys), zoneName: key.zoneName.text, inDatabase: key.databaseID, on: connection, logger: logger)
                }
                return found
            }
        }
    }

    /// One live record (nil: none), its zone found in the same statement (`LookupOne`, prepared: planned once); the
    /// general lookup's statement took 2 ms to plan.
    func lookup(
        _ wanted: (name: String, desiredKeys: [String]?), zoneName: String, inDatabase databaseID: Int64, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> RecordSnapshot? {
        let statement = LookupOne(databaseID: databaseID, zoneName: zoneName, recordName: wanted.name, desiredKeys: wanted.desiredKeys)
        var zoneFound = false
        var found: RecordSnapshot?
        for try await record in try await connection.execute(statement, logger: logger) {
            zoneFound = true
            found = record
        }
        guard zoneFound else { throw CloudError.zoneNotFound(zoneName) }
        return found
    }
}

extension RecordStore {
    /// Runs `job` unless another server process runs the job called `name` right now, so N processes run a
    /// periodic job once, not N times at once: a PostgreSQL advisory lock, held on one connection for the job's
    /// duration and released with it (or by PostgreSQL when the process dies). Nil when another process had it.
    public func exclusively<Result: Sendable>(_ name: String, logger: Logger, _ job: () async throws -> Result) async throws -> Result? {
        try await self.client.reading { connection in
            let key = "stadiumcloud:" + name
            var acquired = false
            for try await got in try await connection.query("SELECT pg_try_advisory_lock(hashtext(\(key))::int8)", logger: logger).decode(Bool.self) {
                acquired = got
            }
            guard acquired else { return nil }
            let result: Swift.Result<Result, any Error>
            do { result = .success(try await job()) } catch { result = .failure(error) }
            _ = try? await connection.query("SELECT pg_advisory_unlock(hashtext(\(key))::int8)", logger: logger)
            return try result.get()
        }
    }
}

/// A record by database, zone, name and the fields asked for (`RecordStore.sharedLookup`).
struct SharedLookupKey: Hashable, Sendable {
    var databaseID: Int64
    var zoneName: ExactName
    var name: ExactName
    var desiredKeys: [String]?
}
