import CloudCore
import CloudRuntime
import Crypto
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Schemas per container and environment (migration 0009): every change adds a version of its scope, and the
/// newest version of a scope is in force there.
extension RecordStore {
    /// The schema in force for a database, or nil when none was ever deployed for its container and environment
    /// (then writes are not checked).
    func schema(ofDatabase databaseID: Int64, on connection: PostgresConnection, logger: Logger) async throws -> Schema? {
        var latest: Int32?
        for try await version in try await connection.query(
            """
            SELECT (SELECT max(v.version) FROM schema_versions v WHERE v.container = d.container AND v.environment = d.environment)
            FROM databases d WHERE d.id = \(databaseID)
            """, logger: logger
        ).decode(Int32?.self) { latest = version }
        guard let latest else { return nil }
        return try await self.schema(version: latest, on: connection, logger: logger)
    }

    /// The newest version of a scope's schema and the schema itself; nil when the scope has none.
    func schema(in scope: SchemaScope, on connection: PostgresConnection, logger: Logger) async throws -> (version: Int32, schema: Schema)? {
        var latest: Int32?
        for try await version in try await connection.query(
            "SELECT max(version) FROM schema_versions WHERE container = \(scope.container) AND environment = \(scope.environment)",
            logger: logger
        ).decode(Int32?.self) { latest = version }
        guard let latest, let schema = try await self.schema(version: latest, on: connection, logger: logger) else { return nil }
        return (latest, schema)
    }

    /// A deployed schema version, parsed once and then cached (versions never change).
    func schema(version: Int32, on connection: PostgresConnection, logger: Logger) async throws -> Schema? {
        if let cached = self.schemaCache.withLock({ $0[version] }) { return cached }
        for try await definition in try await connection.query(
            "SELECT definition::text FROM schema_versions WHERE version = \(version)", logger: logger
        ).decode(String.self) {
            let schema = try Schema.parse(Array(definition.utf8))
            self.schemaCache.withLock { cache in
                // Just-in-time growth in development adds versions; the ones in force are few.
                if cache.count >= 64 { cache.removeAll() }
                cache[version] = schema
            }
            return schema
        }
        return nil
    }

    /// The schema in force in `scope`, read on its own connection.
    public func deployedSchema(in scope: SchemaScope, logger: Logger) async throws -> Schema? {
        try await self.client.reading { connection in try await self.schema(in: scope, on: connection, logger: logger)?.schema }
    }

    /// Deploys `schema` to `scope`: additive changes apply, destructive ones are refused with the reasons. Returns
    /// what changed; deploying the schema in force again changes nothing. Indexes for queryable fields are built
    /// after the commit with `CREATE INDEX CONCURRENTLY`, so writes go on meanwhile.
    @discardableResult
    public func applySchema(_ schema: Schema, to scope: SchemaScope, dryRun: Bool = false, logger: Logger) async throws -> SchemaChanges {
        let changes = try await self.client.transaction(logger: logger) { connection in
            try await Self.lockSchemas(on: connection, logger: logger)
            let current = try await self.schema(in: scope, on: connection, logger: logger)?.schema ?? Schema(recordTypes: [:])
            let changes = current.changes(to: schema)
            guard changes.destructive.isEmpty else {
                throw CloudError.badRequest(
                    "schema change to \(scope) refused: destructive changes cannot be deployed, because records already written depend on them: "
                        + changes.destructive.joined(separator: "; ") + ". Add new fields or types instead.")
            }
            guard !changes.isEmpty, !dryRun else { return changes }
            try await self.insertVersion(schema, in: scope, on: connection, logger: logger)
            return changes
        }
        if !changes.isEmpty, !dryRun { try await self.createIndexes(for: schema, logger: logger) }
        return changes
    }

    /// `stadiumcloud schema deploy`: the container's development schema becomes its production schema, if every
    /// change is additive (CloudKit's "Deploy Schema Changes").
    @discardableResult
    public func deploySchema(container: String, dryRun: Bool = false, logger: Logger) async throws -> SchemaChanges {
        guard let development = try await self.deployedSchema(in: SchemaScope(container: container, environment: "development"), logger: logger)
        else {
            throw CloudError.badRequest("container \(container) has no development schema to deploy: apply one or write records in development")
        }
        return try await self.applySchema(
            development, to: SchemaScope(container: container, environment: "production"), dryRun: dryRun, logger: logger)
    }

    /// Just in time, inside a development write: adds `additions` to the newest version of the scope's schema (read
    /// again under the lock, as another write may have added to it meanwhile) and returns the schema now in force.
    func extendSchema(with additions: Schema, in scope: SchemaScope, on connection: PostgresConnection, logger: Logger) async throws -> Schema {
        try await Self.lockSchemas(on: connection, logger: logger)
        let current = try await self.schema(in: scope, on: connection, logger: logger)?.schema ?? Schema(recordTypes: [:])
        let extended = current.adding(additions)
        guard extended != current else { return current }
        try await self.insertVersion(extended, in: scope, on: connection, logger: logger)
        logger.notice(
            "schema of \(scope) grew just in time",
            metadata: ["added": "\(current.changes(to: extended).additive.joined(separator: ", "))"])
        return extended
    }

    /// The schema of every container and environment that had none yet becomes the newest schema deployed before
    /// schemas were per container (migration 0009). Run at start-up for the containers served; idempotent.
    public func adoptGlobalSchema(containers: some Sequence<String>, logger: Logger) async throws {
        try await self.client.transaction(logger: logger) { connection in
            try await Self.lockSchemas(on: connection, logger: logger)
            for container in containers {
                for environment in SchemaScope.environments {
                    try await connection.query(
                        """
                        INSERT INTO schema_versions (container, environment, definition, deployed_ms)
                        SELECT \(container), \(environment), definition, \(self.clock.now) FROM schema_versions
                        WHERE container = '' AND NOT EXISTS (
                            SELECT 1 FROM schema_versions WHERE container = \(container) AND environment = \(environment))
                        ORDER BY version DESC LIMIT 1
                        """, logger: logger)
                }
            }
        }
    }

    /// One schema change at a time; readers (`SELECT`) are not held up.
    static func lockSchemas(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("LOCK TABLE schema_versions IN EXCLUSIVE MODE", logger: logger)
    }

    func insertVersion(_ schema: Schema, in scope: SchemaScope, on connection: PostgresConnection, logger: Logger) async throws {
        let definition = String(decoding: try JSONEncoder().encode(schema), as: UTF8.self)
        try await connection.query(
            """
            INSERT INTO schema_versions (container, environment, definition, deployed_ms)
            VALUES (\(scope.container), \(scope.environment), \(definition)::jsonb, \(self.clock.now))
            """, logger: logger)
    }

    /// The indexes of `schema`'s queryable and searchable fields, each built without blocking writes (outside any
    /// transaction). An earlier build that failed leaves an invalid index behind: it is dropped and built again.
    func createIndexes(for schema: Schema, logger: Logger) async throws {
        for (typeName, recordType) in schema.recordTypes.sorted(by: { $0.key < $1.key }) {
            for (fieldName, field) in recordType.fields.sorted(by: { $0.key < $1.key }) {
                for index in Self.indexes(of: field, named: fieldName, in: typeName) {
                    var invalid = false
                    for try await valid in try await self.client.query(
                        "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = \(index.name)",
                        logger: logger
                    ).decode(Bool.self) { invalid = !valid }
                    if invalid {
                        try await self.client.query(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(index.name)"), logger: logger)
                    }
                    try await self.client.query(PostgresQuery(unsafeSQL: index.statement), logger: logger)
                }
            }
        }
    }

    /// A queryable field's expression index (equality and ranges) and a searchable one's full-text index (the words
    /// `CONTAINS_*_TOKENS` looks for), each over that record type's live records.
    static func indexes(of field: FieldSchema, named fieldName: String, in recordType: String) -> [(name: String, statement: String)] {
        func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        let digest = SHA256.hash(data: Array("\(recordType).\(fieldName)".utf8)).prefix(8).hexString
        let value = "(fields -> \(literal(fieldName)) -> 'value')"
        let scope = "WHERE record_type = \(literal(recordType)) AND NOT deleted"
        var indexes: [(String, String)] = []
        if field.queryable {
            let name = "records_field_" + digest
            indexes.append((name, "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(name) ON records (zone_id, \(value)) \(scope)"))
        }
        if field.searchable {
            let name = "records_words_" + digest
            indexes.append((name, "CREATE INDEX CONCURRENTLY IF NOT EXISTS \(name) ON records USING gin ((\(QuerySQL.words(in: value)))) \(scope)"))
        }
        return indexes
    }
}
