import CloudCore
import Logging
import PostgresNIO

/// One database of an account's export, with the zones to write.
public struct ExportedDatabase: Sendable, Equatable {
    public var id: Int64
    public var container: String
    public var environment: String
    public var scope: DatabaseScope
    public var zones: [String]
}

/// What the account export reads (docs/PRIVACY.md, "Export"): a page at a time, each page its own snapshot, so an
/// export of any size holds neither a connection nor much memory for long.
extension RecordStore {
    /// The account named `name` and what to export of it: each of its private databases with its live zones, and the
    /// public databases' zones that hold records the person created (trip polls, votes). Nil when there is no such
    /// account.
    public func exportPlan(accountName name: String, logger: Logger) async throws -> (account: Account, databases: [ExportedDatabase])? {
        guard let (id, userRecordName) = try await self.account(named: name, logger: logger) else { return nil }
        let databases = try await self.client.reading { connection in
            var databases: [Int64: ExportedDatabase] = [:]
            for try await (databaseID, container, environment, scope, zone) in try await connection.query(
                """
                SELECT d.id, d.container, d.environment, d.scope, z.zone_name FROM databases d
                JOIN zones z ON z.database_id = d.id AND NOT z.deleted WHERE d.owner_account_id = \(id)
                UNION
                SELECT DISTINCT d.id, d.container, d.environment, d.scope, z.zone_name FROM records r
                JOIN zones z ON z.id = r.zone_id AND NOT z.deleted JOIN databases d ON d.id = z.database_id AND d.scope = 'public'
                WHERE r.created_by = \(userRecordName) AND NOT r.deleted
                """, logger: logger
            ).decode((Int64, String, String, String, String).self) {
                databases[
                    databaseID,
                    default: ExportedDatabase(
                        id: databaseID, container: container, environment: environment, scope: DatabaseScope(rawValue: scope) ?? .private, zones: []
                    )
                ].zones.append(zone)
            }
            // Private first: `d1` is the person's own.
            return databases.values.sorted { ($0.scope == .public ? 1 : 0, $0.id) < ($1.scope == .public ? 1 : 0, $1.id) }.map { database in
                var sorted = database
                sorted.zones.sort()
                return sorted
            }
        }
        return (Account(id: id, name: name, userRecordName: userRecordName), databases)
    }

    /// Up to `limit` live records of a zone in name order, after `after`; in a public database only those
    /// `createdBy` the person.
    public func exportPage(
        of database: ExportedDatabase, zone: String, createdBy: String, after: String?, limit: Int, logger: Logger
    ) async throws -> [RecordSnapshot] {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: nil)
            builder.append(
                """
                SELECT \(columns) FROM records r JOIN zones z ON z.id = r.zone_id AND NOT z.deleted
                WHERE z.database_id = \(builder.bind(database.id)) AND z.zone_name = \(builder.bind(zone)) AND NOT r.deleted
                """)
            if database.scope == .public { builder.append(" AND r.created_by = \(builder.bind(createdBy))") }
            if let after { builder.append(" AND r.record_name > \(builder.bind(after))") }
            builder.append(" ORDER BY r.record_name LIMIT \(builder.bind(limit))")
            var page: [RecordSnapshot] = []
            for try await row in try await connection.query(builder.query, logger: logger) { page.append(try Self.snapshot(row)) }
            return page
        }
    }

    /// The assets a live record of the database references, by checksum, with their sizes.
    public func exportedAssets(of database: ExportedDatabase, logger: Logger) async throws -> [(checksum: String, size: Int64)] {
        try await self.client.reading { connection in
            var assets: [(String, Int64)] = []
            for try await row in try await connection.query(
                """
                SELECT a.checksum, a.size FROM assets a WHERE a.database_id = \(database.id) AND EXISTS (
                    SELECT 1 FROM records r JOIN zones z ON z.id = r.zone_id
                    WHERE z.database_id = a.database_id AND NOT r.deleted AND r.asset_refs @> ARRAY[a.checksum])
                ORDER BY a.checksum
                """, logger: logger
            ).decode((String, Int64).self) { assets.append(row) }
            return assets
        }
    }
}
