import CloudCore
import Logging
import PostgresNIO

extension RecordStore {
    /// Runs `write` (an account export's import) in one transaction on an account that holds nothing yet: whatever it
    /// throws, the account is left exactly as it was. CONFLICT when the account holds data.
    public func importAccount<Result: Sendable>(
        into account: Account, logger: Logger, _ write: (AccountImportWrite) async throws -> Result
    ) async throws -> Result {
        let (result, written) = try await self.client.transaction(logger: logger) { connection in
            // Two imports into one account would both find it empty.
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext('account import ' || \(String(account.id)))::int8)", logger: logger)
            try await Self.lockAndCheckHoldsNothing(account, on: connection, logger: logger)
            let writer = AccountImportWrite(store: self, account: account, connection: connection, logger: logger)
            let result = try await write(writer)
            return (result, writer.databaseIDs)
        }
        if !written.isEmpty { self.changes.committed(Array(written)) }
        return result
    }

    /// CONFLICT unless every private database of the account holds only an empty default zone (a device that signed
    /// in made one); checked once more, under the databases' locks, inside `importAccount`.
    public func checkHoldsNothing(_ account: Account, logger: Logger) async throws {
        try await self.client.reading { connection in try await Self.checkHoldsNothing(account, on: connection, logger: logger) }
    }

    private static func lockAndCheckHoldsNothing(_ account: Account, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "SELECT id FROM databases WHERE owner_account_id = \(account.id) AND scope = \(DatabaseScope.private.rawValue) ORDER BY id FOR UPDATE",
            logger: logger)
        try await Self.checkHoldsNothing(account, on: connection, logger: logger)
    }

    private static func checkHoldsNothing(_ account: Account, on connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            """
            SELECT 1 FROM zones z JOIN databases d ON d.id = z.database_id
            WHERE d.owner_account_id = \(account.id) AND d.scope = \(DatabaseScope.private.rawValue) AND NOT z.deleted
            AND (z.zone_name <> \(defaultZoneName) OR EXISTS (SELECT 1 FROM records r WHERE r.zone_id = z.id AND NOT r.deleted))
            LIMIT 1
            """, logger: logger)
        for try await _ in rows {
            throw CloudError(.conflict, "account \(account.name) already holds data; an export is imported into a fresh account only")
        }
    }
}

/// The writes of one account import, all inside `RecordStore.importAccount`'s transaction.
public final class AccountImportWrite {
    let store: RecordStore
    let account: Account
    let connection: PostgresConnection
    let logger: Logger
    /// The databases written to, announced once the transaction commits.
    private(set) var databaseIDs: Set<Int64> = []

    init(store: RecordStore, account: Account, connection: PostgresConnection, logger: Logger) {
        self.store = store
        self.account = account
        self.connection = connection
        self.logger = logger
    }

    /// The account's private database of this container and environment, created when it has none.
    public func privateDatabase(container: String, environment: String) async throws -> DatabaseRef {
        let id: Int64
        do {
            id = try await self.store.findOrCreateDatabase(
                container: container, environment: environment, scope: .private, owner: self.account, on: self.connection, logger: self.logger)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23503" {
            throw CloudError.accountErased
        }
        self.databaseIDs.insert(id)
        return DatabaseRef(id: id, scope: .private, ownerRecordName: self.account.userRecordName)
    }

    public func createZones(_ names: [String], in database: DatabaseRef) async throws {
        guard !names.isEmpty else { return }
        for outcome in try await self.store.modifyZones(names.map { .create($0) }, in: database, on: self.connection, logger: self.logger) {
            if case .failed(_, let error) = outcome { throw error }
        }
    }

    /// Places an asset's verified bytes (`publish`) and notes them as the database's.
    public func placeAsset(checksum: String, size: Int64, in database: DatabaseRef, publish: () async throws -> Void) async throws {
        try await self.store.publishAsset(
            checksum: checksum, size: size, in: database.id, on: self.connection, logger: self.logger, publish: publish)
    }

    /// Writes a page of records into a zone; returns how many.
    public func write(_ drafts: [RecordDraft], zone: String, in database: DatabaseRef, stamp: ChangeStamp) async throws -> Int {
        guard !drafts.isEmpty else { return 0 }
        return try await self.store.rewriteZones(
            [zone], in: database, only: drafts.map(\.recordName), stamp: stamp, on: self.connection, logger: self.logger
        ) { _ in [zone: drafts] }
    }
}
