import CloudCore
import Crypto
import Foundation
import Logging
import PostgresNIO

extension RecordStore {
    /// The schema in force, or nil when none was ever deployed (then writes are not checked).
    func schema(on connection: PostgresConnection, logger: Logger) async throws -> Schema? {
        var latest: Int32?
        for try await version in try await connection.query(
            "SELECT max(version) FROM schema_versions", logger: logger
        ).decode(Int32?.self) { latest = version }
        guard let latest else { return nil }
        return try await self.schema(version: latest, on: connection, logger: logger)
    }

    /// A deployed schema version, parsed once and then cached.
    func schema(version latest: Int32, on connection: PostgresConnection, logger: Logger) async throws -> Schema? {
        if let cached = self.schemaCache.withLock({ $0 }), cached.version == latest { return cached.schema }
        for try await definition in try await connection.query(
            "SELECT definition::text FROM schema_versions WHERE version = \(latest)", logger: logger
        ).decode(String.self) {
            let schema = try Schema.parse(Array(definition.utf8))
            self.schemaCache.withLock { $0 = (latest, schema) }
            return schema
        }
        return nil
    }

    /// The schema in force, read on its own connection.
    public func deployedSchema(logger: Logger) async throws -> Schema? {
        try await self.client.reading { connection in try await self.schema(on: connection, logger: logger) }
    }

    /// Deploys `schema`: additive changes apply (with the indexes queryable fields need), destructive ones are
    /// refused with the reasons. Returns what changed; deploying the schema in force again changes nothing.
    @discardableResult
    public func applySchema(_ schema: Schema, dryRun: Bool = false, logger: Logger) async throws -> SchemaChanges {
        try await self.client.transaction(logger: logger) { connection in
            // One deploy at a time.
            try await connection.query("LOCK TABLE schema_versions IN EXCLUSIVE MODE", logger: logger)
            let current = try await self.schema(on: connection, logger: logger) ?? Schema(recordTypes: [:])
            let changes = current.changes(to: schema)
            guard changes.destructive.isEmpty else {
                throw CloudError.badRequest(
                    "schema change refused: destructive changes cannot be deployed, because records already written depend on them: "
                        + changes.destructive.joined(separator: "; ") + ". Add new fields or types instead.")
            }
            guard !changes.isEmpty, !dryRun else { return changes }
            for (typeName, recordType) in schema.recordTypes.sorted(by: { $0.key < $1.key }) {
                for (fieldName, field) in recordType.fields.sorted(by: { $0.key < $1.key }) where field.queryable {
                    try await connection.query(Self.indexStatement(recordType: typeName, field: fieldName), logger: logger)
                }
            }
            let definition = String(decoding: try JSONEncoder().encode(schema), as: UTF8.self)
            try await connection.query(
                "INSERT INTO schema_versions (definition, deployed_ms) VALUES (\(definition)::jsonb, \(self.clock.now))", logger: logger)
            return changes
        }
    }

    /// An expression index for equality and range filters on one field of one record type.
    static func indexStatement(recordType: String, field: String) -> PostgresQuery {
        let digest = SHA256.hash(data: Array("\(recordType).\(field)".utf8)).prefix(8).hexString
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        return PostgresQuery(
            unsafeSQL: """
                CREATE INDEX IF NOT EXISTS records_field_\(digest) ON records (zone_id, (fields -> \(literal(field)) -> 'value'))
                WHERE record_type = \(literal(recordType)) AND NOT deleted
                """)
    }
}
