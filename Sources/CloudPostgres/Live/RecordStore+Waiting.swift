import CloudCore
import Logging
import PostgresNIO

/// Where a waiting client stands: a database token (`changes/database`) or zone tokens (`changes/zone`).
public enum WaitPosition: Sendable {
    case database(syncToken: String?)
    /// Zone names with the client's token for each (nil: it has none yet).
    case zones([(name: String, syncToken: String?)])
}

extension RecordStore {
    /// What changed after `position`, in one statement: for a database token the names of the zones changed after it
    /// (at most a page's worth), for zone tokens the names of the zones with changes after their token (or deleted, or re-created, or without a
    /// token: the client's fetch then says what happened). Empty when nothing did. Tokens are checked as the
    /// fetches check them, so a token another fetch would refuse is refused here too. A database that is gone (its
    /// account erased, which wakes its waiters) is `CloudError.accountErased`, so a wait ends at once as the
    /// device's next request would.
    public func pendingChanges(after position: WaitPosition, in database: DatabaseRef, logger: Logger) async throws -> [String] {
        // Each statement starts from the database's row, joining its zones: no row at all is a database that is gone.
        var databaseExists = false
        switch position {
        case .database(let syncToken):
            // The zones changed after the token, live or deleted. Without a token, or with one of another history or
            // ahead of the head (the database was rolled back), every live zone: the fetch that follows says more.
            let since = try syncToken.flatMap { try self.waitToken($0, kind: .database, in: database) }?.seq ?? -1
            var changed: [String] = []
            for try await name in try await self.client.query(
                """
                SELECT z.zone_name FROM databases d LEFT JOIN zones z ON z.database_id = d.id
                    AND (CASE WHEN \(since) BETWEEN 0 AND d.change_seq THEN z.change_seq > \(since) ELSE NOT z.deleted END)
                WHERE d.id = \(database.id) ORDER BY z.change_seq LIMIT \(self.limits.maxResultsLimit)
                """, logger: logger
            ).decode(String?.self) {
                databaseExists = true
                if let name { changed.append(name) }
            }
            guard databaseExists else { throw CloudError.accountErased }
            return changed
        case .zones(let zones):
            let tokens = try zones.map { zone in try zone.syncToken.flatMap { try self.waitToken($0, kind: .zone, in: database) } }
            var live: [String: (id: Int64, changeSeq: Int64, head: Int64)] = [:]
            for try await (name, id, seq, head) in try await self.client.query(
                """
                SELECT z.zone_name, z.id, z.change_seq, d.change_seq FROM databases d LEFT JOIN zones z ON z.database_id = d.id
                    AND z.zone_name = ANY(\(zones.map(\.name))) AND NOT z.deleted
                WHERE d.id = \(database.id)
                """, logger: logger
            ).decode((String?, Int64?, Int64?, Int64).self) {
                databaseExists = true
                if let name, let id, let seq { live[name] = (id, seq, head) }
            }
            guard databaseExists else { throw CloudError.accountErased }
            return zip(zones, tokens).compactMap { zone, token in
                guard let token, let current = live[zone.name], current.id == token.zoneID, current.changeSeq <= token.seq, token.seq <= current.head
                else { return zone.name }
                return nil
            }
        }
    }

    /// A waiting client's token, or nil when it is of another history (the fetch it is told to make says so).
    private func waitToken(_ text: String, kind: ChangeToken.Kind, in database: DatabaseRef) throws -> ChangeToken? {
        guard !text.isEmpty else { return nil }
        do {
            return try self.readToken(text, kind: kind, in: database)
        } catch let error as CloudError where error.code == .changeTokenExpired {
            return nil
        }
    }
}
