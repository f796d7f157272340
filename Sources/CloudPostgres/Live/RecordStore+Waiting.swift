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
    /// What changed after `position`, in one statement: for a database token `["*"]` if anything did, for zone
    /// tokens the names of the zones with changes after their token (or deleted, or re-created, or without a
    /// token: the client's fetch then says what happened). Empty when nothing did. Tokens are checked as the
    /// fetches check them, so a token another fetch would refuse is refused here too.
    public func pendingChanges(after position: WaitPosition, in database: DatabaseRef, logger: Logger) async throws -> [String] {
        switch position {
        case .database(let syncToken):
            guard let syncToken, !syncToken.isEmpty else { return ["*"] }
            let token = try ChangeToken.decode(syncToken, kind: .database, with: self.signer)
            guard token.databaseID == database.id else { throw ChangeToken.notValidHere }
            for try await head in try await self.client.query(
                "SELECT change_seq FROM databases WHERE id = \(database.id)", logger: logger
            ).decode(Int64.self) { return head > token.seq ? ["*"] : [] }
            return ["*"]
        case .zones(let zones):
            let tokens = try zones.map { try self.zoneToken($0.syncToken, in: database) }
            var live: [String: (id: Int64, changeSeq: Int64)] = [:]
            for try await (name, id, seq) in try await self.client.query(
                "SELECT zone_name, id, change_seq FROM zones WHERE database_id = \(database.id) AND zone_name = ANY(\(zones.map(\.name))) AND NOT deleted",
                logger: logger
            ).decode((String, Int64, Int64).self) { live[name] = (id, seq) }
            return zip(zones, tokens).compactMap { zone, token in
                guard let token, let current = live[zone.name], current.id == token.zoneID, current.changeSeq <= token.seq else { return zone.name }
                return nil
            }
        }
    }
}
