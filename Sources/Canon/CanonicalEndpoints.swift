import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Logging
import Metrics
import SportsDomain
import Synchronization

/// The documented extensions `canonical/resolve`, `canonical/nearby`, `canonical/games`, `canonical/gameDates`,
/// `canonical/match` and `canonical/standings` on the public database (docs/CANONICAL.md). They answer from a `CanonicalCatalog`, made
/// again once (however many requests wait for it) when a listed zone of the database changes: updated in memory
/// when only games changed, rebuilt otherwise; a trip poll's zone is unlisted, so votes do not touch it.
public final class CanonicalEndpoints: Sendable {
    let records: RecordStore
    private let cache = Mutex<[Int64: (head: Int64, catalog: Task<CanonicalCatalog, any Error>)]>([:])
    /// The last change among each database's listed zones, read once for all the requests that asked before the read
    /// started: 32 concurrent requests cost one query, not 32, and each still sees what changed before it asked.
    private let heads = CoalescedReads<DatabaseRef, Int64>()
    /// Catalogs built so far (tests: what does and does not rebuild one).
    var catalogsBuilt: Int { self.built.load(ordering: .relaxed) }
    private let built = Atomic<Int>(0)

    public init(records: RecordStore) {
        self.records = records
        // A catalog of a lost history may carry the same head as the restored data: it goes.
        records.history.onFork { [weak self] in self?.cache.withLock { $0.removeAll() } }
    }

    /// The endpoints, and the checks on visits and achievements written to private databases.
    public var extensions: ServerExtensions {
        ServerExtensions(endpoints: self.endpoints, writeRules: self, publicData: CanonicalEditor(records: self.records))
    }

    public var endpoints: [ExtensionEndpoint] {
        [
            ExtensionEndpoint(path: "canonical/resolve") { body, database, logger in try await self.resolve(body, database, logger) },
            ExtensionEndpoint(path: "canonical/nearby") { body, database, logger in try await self.nearby(body, database, logger) },
            ExtensionEndpoint(path: "canonical/games") { body, database, logger in try await self.games(body, database, logger) },
            ExtensionEndpoint(path: "canonical/gameDates") { body, database, logger in try await self.gameDates(body, database, logger) },
            ExtensionEndpoint(path: "canonical/match") { body, database, logger in try await self.match(body, database, logger) },
            ExtensionEndpoint(path: "canonical/standings") { body, database, logger in try await self.standings(body, database, logger) },
        ]
    }

    public func catalog(for database: DatabaseRef, logger: Logger) async throws -> CanonicalCatalog {
        guard database.scope == .public else { throw CloudError.badRequest("canonical/* answers from the public database only") }
        let head = try await self.listedZonesHead(of: database, logger: logger)
        let task = self.cache.withLock { cache in
            if let cached = cache[database.id], cached.head == head { return cached.catalog }
            let records = self.records
            let previous = cache[database.id]
            self.built.add(1, ordering: .relaxed)
            let task = Task {
                // Only games changed since the last catalog (a live day's scores): update it in memory, in
                // milliseconds, instead of reading and indexing every record again (seconds).
                if let previous, let catalog = try? await previous.catalog.value,
                    let changed = try? await records.records(
                        ofTypes: CanonicalCatalog.recordTypes, in: database, changedAfter: previous.head, logger: logger),
                    let updated = catalog.updating(with: changed)
                {
                    return updated
                }
                return CanonicalCatalog(
                    records: try await records.records(ofTypes: CanonicalCatalog.recordTypes, in: database, logger: logger))
            }
            cache[database.id] = (head, task)
            return task
        }
        do {
            return try await task.value
        } catch {
            // A failed load is not kept: the next request tries again.
            self.cache.withLock { cache in if cache[database.id]?.head == head { cache[database.id] = nil } }
            throw error
        }
    }

    /// Builds the catalogs of these public databases now, so the first canonical request or visit saved after a start
    /// does not wait seconds for it (nor runs into the database deadline meanwhile).
    public func warm(containers: some Sequence<String>, environments: [String], logger: Logger) async {
        for container in containers {
            for environment in environments {
                do {
                    let database = try await self.records.database(
                        container: container, environment: environment, scope: .public, owner: nil, logger: logger)
                    _ = try await self.catalog(for: database, logger: logger)
                } catch {
                    // Not fatal: the first request builds the catalog again.
                    logger.error(
                        "the canonical catalog could not be built ahead of requests",
                        metadata: ["container": "\(container)", "environment": "\(environment)", "error": "\(error)"])
                    Counter(label: "stadiumcloud_job_failures_total", dimensions: [("job", "catalog-warm-up")]).increment()
                }
            }
        }
    }

    func listedZonesHead(of database: DatabaseRef, logger: Logger) async throws -> Int64 {
        try await self.heads.read(database) { databases in
            var heads: [DatabaseRef: Int64] = [:]
            for database in databases { heads[database] = try await self.records.listedZonesHead(of: database, logger: logger) }
            return heads
        } ?? 0
    }

    func directory(for database: DatabaseRef, logger: Logger) async throws -> CanonicalDirectory {
        try await self.catalog(for: database, logger: logger).directory
    }

    /// A date as ms since 1970, or `YYYY-MM-DD`, between the years 1000 and 9999.
    static func date(_ value: JSONValue?) throws -> Int64? {
        guard let value, !value.isNull else { return nil }
        let invalid = CloudError.badRequest("date must be milliseconds since 1970 or YYYY-MM-DD, between the years 1000 and 9999")
        if let text = value.stringValue, text.dropFirst().contains("-") {
            do { return try CanonicalDate.milliseconds(text) } catch { throw invalid }
        }
        guard let ms = value.int64Value, CanonicalDate.supported.contains(ms) else { throw invalid }
        return ms
    }

    func resolve(_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue {
        guard let name = body["name"]?.stringValue, !name.isEmpty else { throw CloudError.badRequest("name is required") }
        let results = try await self.directory(for: database, logger: logger).resolve(name, on: try Self.date(body["date"]))
        return [
            "results": .array(
                results.map { result in
                    [
                        "canonicalId": .string(result.canonicalId), "recordType": .string(result.recordType),
                        "uuid": .string(CanonicalID.uuid(for: result.canonicalId).uuidString), "currentName": .string(result.currentName),
                        "allNames": .array(result.allNames.map(JSONValue.string)), "matchedName": .string(result.matchedName),
                    ]
                })
        ]
    }

    func nearby(_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue {
        guard let latitude = body["latitude"]?.doubleValue, let longitude = body["longitude"]?.doubleValue,
            (-90...90).contains(latitude), (-180...180).contains(longitude)
        else { throw CloudError.badRequest("latitude (-90…90) and longitude (-180…180) are required") }
        let radius = body["radius"]?.doubleValue ?? 5000
        guard radius > 0, radius <= 50_000 else { throw CloudError.badRequest("radius must be 1 to 50000 metres") }
        let venues = try await self.directory(for: database, logger: logger).nearby(
            latitude: latitude, longitude: longitude, radius: radius, sport: body["sport"]?.stringValue, on: try Self.date(body["date"]))
        return [
            "venues": .array(
                venues.map { venue in
                    [
                        "canonicalId": .string(venue.canonicalId), "name": .string(venue.name),
                        "distance": .double((venue.distanceMeters * 10).rounded() / 10), "confidence": .string(venue.confidence.rawValue),
                    ]
                })
        ]
    }
}
