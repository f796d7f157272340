import CloudCore
import CloudRuntime
import Foundation
import Logging
import PostgresNIO

/// The `Idempotency-Key` extension: answers kept with their writes, so a retried write is answered, not redone.
extension RecordStore {
    /// Forgets stored answers older than `olderThanMs` (retries are expected within minutes, kept for a day).
    public func purgeIdempotentWrites(olderThanMs cutoff: Int64, logger: Logger) async throws {
        _ = try await translatingDatabaseErrors {
            try await self.client.query("DELETE FROM idempotent_writes WHERE created_ms < \(cutoff)", logger: logger)
        }
    }

    /// Stores the answer to `write` with the write itself (same transaction) and returns the result carrying it.
    func keepAnswer(
        to write: IdempotentWrite, of result: ModifyResult, databaseID: Int64, on connection: PostgresConnection, logger: Logger
    ) async throws -> ModifyResult {
        var result = result
        let answer = try write.answer(result)
        // Replaces the answer the upsert stored when a create met a live record (RecordStore+Modify).
        try await connection.query(
            """
            INSERT INTO idempotent_writes (database_id, key, request_hash, status, answer, created_ms)
            VALUES (\(databaseID), \(write.key), \(write.requestHash), \(answer.status), \(Data(answer.body)), \(self.clock.now))
            ON CONFLICT (database_id, key) DO UPDATE SET status = excluded.status, answer = excluded.answer
            """, logger: logger)
        result.answer = answer
        return result
    }
}

/// An idempotent write's answer, stored by the statement that writes its records (created at their `modified` time).
struct KeptAnswer {
    var key: String
    var requestHash: Data
    var answer: StoredAnswer
}
