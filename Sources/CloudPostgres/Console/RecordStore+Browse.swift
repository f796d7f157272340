import CloudCore
import Logging
import PostgresNIO

/// A public record as the operator console lists it.
public struct PublicRecordSummary: Sendable, Equatable {
    public var zone: String
    public var recordName: String
    public var recordType: String
    /// Its `name` field, when it has one.
    public var title: String?
    public var changeSeq: Int64
    public var modified: ChangeStamp
    public var deleted: Bool
    /// It has a `deprecatedAt` field (canonical data is deprecated, never deleted).
    public var deprecated: Bool
}

/// What the console's public data and schema pages read. Only the public database: a person's records never
/// leave `statistics` other than as counts. Unlisted zones (share codes) are left out too.
extension RecordStore {
    static let summaryColumns = """
        z.zone_name, r.record_name, r.record_type, r.fields->'name'->>'value', r.change_seq, r.modified_ms, r.modified_by,
        r.modified_device, r.deleted, r.fields ? 'deprecatedAt'
        """
    typealias SummaryColumns = (String, String, String, String?, Int64, Int64, String, String, Bool, Bool)

    static func summary(_ c: SummaryColumns) -> PublicRecordSummary {
        PublicRecordSummary(
            zone: c.0, recordName: c.1, recordType: c.2, title: c.3, changeSeq: c.4,
            modified: ChangeStamp(timestamp: c.5, userRecordName: c.6, deviceID: c.7), deleted: c.8, deprecated: c.9)
    }

    /// `FROM` and `WHERE` for the listed zones of one public database; binds the scope.
    static func publicZones(_ builder: inout SQLBuilder, _ scope: SchemaScope) -> String {
        """
        FROM databases d JOIN zones z ON z.database_id = d.id AND NOT z.deleted AND z.zone_name NOT LIKE '\(UnlistedZone.prefix)%'
        JOIN records r ON r.zone_id = z.id
        WHERE d.container = \(builder.bind(scope.container)) AND d.environment = \(builder.bind(scope.environment)) AND d.scope = 'public'
        """
    }

    /// The record types of the public database with their live records, by type.
    public func publicRecordTypes(in scope: SchemaScope, logger: Logger) async throws -> [(recordType: String, count: Int64)] {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            builder.append("SELECT r.record_type, count(*) \(Self.publicZones(&builder, scope)) AND NOT r.deleted GROUP BY 1 ORDER BY 1")
            return try await connection.query(builder.query, logger: logger).decode((String, Int64).self).all().map { ($0.0, $0.1) }
        }
    }

    /// Live public records of `recordType` (any type when empty) whose name or a text field contains `text`
    /// (case-insensitive; everything when empty), by type and name; at most `limit`.
    public func searchPublicRecords(
        in scope: SchemaScope, recordType: String, containing text: String, limit: Int = 50, logger: Logger
    ) async throws -> [PublicRecordSummary] {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            let from = Self.publicZones(&builder, scope)
            builder.append("SELECT \(Self.summaryColumns) \(from) AND NOT r.deleted")
            if !recordType.isEmpty { builder.append(" AND r.record_type = \(builder.bind(recordType))") }
            if !text.isEmpty {
                // Substring search as the accounts page does it: no pattern, so nothing in the text needs escaping.
                let lowered = builder.bind(text.lowercased())
                builder.append(
                    """
                     AND (strpos(lower(r.record_name), \(lowered)) > 0 OR EXISTS (
                        SELECT 1 FROM jsonb_each(r.fields) f WHERE f.value->>'type' = 'STRING' AND strpos(lower(f.value->>'value'), \(lowered)) > 0))
                    """)
            }
            builder.append(" ORDER BY r.record_type, r.record_name LIMIT \(builder.bind(limit))")
            return try await connection.query(builder.query, logger: logger).decode(SummaryColumns.self).all().map(Self.summary)
        }
    }

    /// One public record (live or a tombstone) and the live records of its zone that refer to it (its aliases, a
    /// team's venues, the teams playing in a venue), at most 100.
    public func publicRecord(
        in scope: SchemaScope, zone: String, recordName: String, logger: Logger
    ) async throws -> (record: Record, referrers: [Record])? {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            let columns = Self.recordColumns(&builder, desiredKeys: nil)
            let from = Self.publicZones(&builder, scope)
            builder.append("SELECT \(columns) \(from) AND z.zone_name = \(builder.bind(zone)) AND r.record_name = \(builder.bind(recordName))")
            var found: Record?
            for try await row in try await connection.query(builder.query, logger: logger) { found = try Self.record(from: Self.snapshot(row)) }
            guard let found else { return nil }
            var referrers = SQLBuilder()
            let referrerColumns = Self.recordColumns(&referrers, desiredKeys: nil)
            let referrersFrom = Self.publicZones(&referrers, scope)
            referrers.append(
                """
                SELECT \(referrerColumns) \(referrersFrom) AND NOT r.deleted AND z.zone_name = \(referrers.bind(zone))
                AND jsonb_path_exists(r.fields, '$.*.value.recordName ? (@ == $name)', jsonb_build_object('name', \(referrers.bind(recordName))::text))
                ORDER BY r.record_type, r.record_name LIMIT 100
                """)
            var others: [Record] = []
            for try await row in try await connection.query(referrers.query, logger: logger) {
                others.append(try Self.record(from: Self.snapshot(row)))
            }
            return (found, others)
        }
    }

    /// The newest changes of the public database (tombstones too), newest first.
    public func publicChanges(in scope: SchemaScope, limit: Int = 100, logger: Logger) async throws -> [PublicRecordSummary] {
        try await self.client.reading { connection in
            var builder = SQLBuilder()
            builder.append(
                "SELECT \(Self.summaryColumns) \(Self.publicZones(&builder, scope)) ORDER BY r.change_seq DESC LIMIT \(builder.bind(limit))")
            return try await connection.query(builder.query, logger: logger).decode(SummaryColumns.self).all().map(Self.summary)
        }
    }

    /// The schema versions deployed to a scope, newest first, with their record types.
    public func schemaVersions(in scope: SchemaScope, limit: Int = 20, logger: Logger) async throws -> [(
        version: Int32, deployedMs: Int64, recordTypes: Int
    )] {
        try await self.client.reading { connection in
            try await connection.query(
                """
                SELECT version, deployed_ms, (SELECT count(*)::int4 FROM jsonb_object_keys(definition->'recordTypes'))
                FROM schema_versions WHERE container = \(scope.container) AND environment = \(scope.environment) ORDER BY version DESC LIMIT \(limit)
                """, logger: logger
            ).decode((Int32, Int64, Int32).self).all().map { ($0.0, $0.1, Int($0.2)) }
        }
    }
}
