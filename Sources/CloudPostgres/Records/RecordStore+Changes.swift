import CloudCore
import CloudRuntime
import Logging
import PostgresNIO

extension RecordStore {
    /// The changes in a zone after `syncToken` (everything, without tombstones, when it is nil). With `storedAnswers`
    /// and all fields desired, each record comes as its stored answer (`RecordSnapshot.storedAnswer`), for a response
    /// to copy.
    ///
    /// The database's change head is read in the same statement (one snapshot) as the changed rows. Writers hold
    /// the database row lock from their first statement to commit, so a snapshot that sees head H sees every
    /// change numbered up to H: a token never jumps over a change that commits later.
    public func changes(
        zoneName: String, since syncToken: String?, limit: Int?, desiredKeys: [String]?, recordTypes: [String]?,
        storedAnswers: Bool = false, in database: DatabaseRef, logger: Logger
    ) async throws -> ZoneChanges {
        let limit = try self.resultsLimit(limit)
        let token = try self.zoneToken(syncToken, in: database)
        // Most polls find nothing new: the zone's own head says so, in one prepared (planned once) statement that
        // reads the heads for every poll that asked before it started (`CoalescedReads`).
        if let token, let zone = try await self.zoneHead(database.id, zoneName, logger: logger), zone.changeSeq <= token.seq {
            if token.zoneID != zone.id {
                try await self.client.reading { connection in
                    try await self.rejectForeignZoneToken(token, zoneName: zoneName, in: database, on: connection, logger: logger)
                }
            }
            if token.isExpired(purgedSeq: zone.purgedSeq) || token.seq > zone.head { throw CloudError.changeTokenExpired }
            // Nothing changed here: the token stays where it is, however much other zones changed (a season nobody
            // touches keeps its token while tonight's scores are written to another).
            let next = self.token(.zone, in: database, zoneID: zone.id, seq: token.seq, horizon: zone.purgedSeq)
            return ZoneChanges(records: [], syncToken: next, moreComing: false)
        }
        return try await self.client.reading { connection in
            // One statement, one snapshot: the zone, the database head, the purge horizon and the rows.
            let page = ZoneChangesPage(
                databaseID: database.id, zoneName: zoneName, after: token?.seq ?? 0,
                // A first fetch skips tombstones: of records deleted before it began, which the client never had.
                tombstonesAfter: token.map { $0.firstFetchHead > 0 ? $0.firstFetchHead : -1 } ?? .max,
                recordTypes: recordTypes, desiredKeys: desiredKeys, limit: limit + 1)
            var zone: ZoneHeads.Head?
            var records: [RecordSnapshot] = []
            records.reserveCapacity(limit + 1)
            func read<Page: PostgresPreparedStatement>(_ page: Page) async throws where Page.Row == ZoneChangesPage.Row {
                for try await row in try await connection.execute(page, logger: logger) {
                    switch row {
                    case .zone(let head): zone = head
                    case .record(let record): records.append(record)
                    }
                }
            }
            if storedAnswers && desiredKeys == nil { try await read(ZoneAnswersPage(page)) } else { try await read(page) }
            guard let zone else { throw CloudError.zoneNotFound(zoneName) }
            if let token {
                if token.zoneID != zone.id {
                    try await self.rejectForeignZoneToken(token, zoneName: zoneName, in: database, on: connection, logger: logger)
                }
                if token.isExpired(purgedSeq: zone.purgedSeq) || token.seq > zone.head { throw CloudError.changeTokenExpired }
            }
            let moreComing = records.count > limit
            if moreComing { records.removeLast() }
            // The last page ends at the zone's own last change (or where the token was): a later write to the zone is
            // numbered after the database's head, which this snapshot saw, so nothing between is skipped, and the
            // token of a zone nobody wrote to does not move when others change.
            let position = moreComing ? records.last!.changeSeq : max(token?.seq ?? 0, zone.changeSeq)
            // The pages after a first one are still the first fetch: they skip what was deleted before it began.
            let firstFetchHead = moreComing ? (token.map(\.firstFetchHead) ?? zone.head) : 0
            let next = self.token(.zone, in: database, zoneID: zone.id, seq: position, horizon: zone.purgedSeq, firstFetchHead: firstFetchHead)
            return ZoneChanges(records: records, syncToken: next, moreComing: moreComing)
        }
    }

    /// A zone's head (nil: no such zone), from a read that started after this call and may answer other polls too.
    func zoneHead(_ databaseID: Int64, _ zoneName: String, logger: Logger) async throws -> ZoneHeads.Head? {
        try await self.zoneHeads.read(ZoneHeads.Key(databaseID: databaseID, zoneName: zoneName)) { keys in
            try await self.client.reading { connection in
                var heads: [ZoneHeads.Key: ZoneHeads.Head] = [:]
                for try await (key, head) in try await connection.execute(ZoneHeads(keys: keys), logger: logger) { heads[key] = head }
                return heads
            }
        }
    }

    /// A client's zone token, verified and bound to this database (the zone is checked against the query's).
    func zoneToken(_ syncToken: String?, in database: DatabaseRef) throws -> ChangeToken? {
        guard let syncToken, !syncToken.isEmpty else { return nil }
        return try self.readToken(syncToken, kind: .zone, in: database)
    }

    /// A client's token, verified: CHANGE_TOKEN_EXPIRED when it was issued in another history of the database (before
    /// a restore or failover: its numbers may name other changes now), BAD_REQUEST when it is not this database's.
    func readToken(_ text: String, kind: ChangeToken.Kind, in database: DatabaseRef) throws -> ChangeToken {
        let token = try ChangeToken.decode(text, kind: kind, with: self.signer)
        guard self.client.history.isCurrent(token.epoch) else { throw CloudError.changeTokenExpired }
        guard token.databaseID == database.id else { throw ChangeToken.notValidHere }
        return token
    }

    /// A token for a position in `database`, signed in the current history.
    func token(
        _ kind: ChangeToken.Kind, in database: DatabaseRef, zoneID: Int64 = 0, seq: Int64, horizon: Int64 = 0, firstFetchHead: Int64 = 0
    ) -> String {
        ChangeToken(
            kind: kind, databaseID: database.id, zoneID: zoneID, seq: seq, horizon: horizon, epoch: self.client.history.epoch?.id ?? 0,
            firstFetchHead: firstFetchHead
        ).encode(with: self.signer)
    }

    /// A token of another zone: expired when it is of a deleted zone of the same name (the client starts over),
    /// otherwise a client mistake.
    func rejectForeignZoneToken(_ token: ChangeToken, zoneName: String, in database: DatabaseRef, on connection: PostgresConnection, logger: Logger)
        async throws -> Never
    {
        let rows = try await connection.query(
            "SELECT 1 FROM zones WHERE id = \(token.zoneID) AND database_id = \(database.id) AND zone_name = \(zoneName) AND deleted",
            logger: logger)
        for try await _ in rows { throw CloudError.changeTokenExpired }
        throw CloudError.badRequest("syncToken belongs to another zone")
    }

    /// Zones created, changed or deleted after a database token (`changes/database`).
    public func databaseChanges(since syncToken: String?, limit: Int?, in database: DatabaseRef, logger: Logger) async throws -> DatabaseChanges {
        let limit = try self.resultsLimit(limit)
        var token: ChangeToken?
        if let syncToken, !syncToken.isEmpty { token = try self.readToken(syncToken, kind: .database, in: database) }
        let since = token?.seq
        // A first fetch (no token, or a page of one) skips zones deleted before it began, as a zone's first fetch does.
        let deletedAfter: Int64? = token.map { $0.firstFetchHead > 0 ? $0.firstFetchHead : -1 }
        return try await self.client.reading { connection in
            let rows = try await connection.query(
                """
                SELECT d.change_seq, d.purged_seq, z.zone_name, z.change_seq, z.deleted FROM databases d
                LEFT JOIN LATERAL (
                    SELECT zone_name, change_seq, deleted FROM zones
                    WHERE database_id = d.id AND change_seq > \(since ?? -1) AND (NOT deleted OR change_seq > \(deletedAfter ?? Int64.max))
                    ORDER BY change_seq LIMIT \(limit + 1)) z ON true
                WHERE d.id = \(database.id)
                """, logger: logger)
            var head: Int64 = 0
            var purged: Int64 = 0
            var zones: [(ZoneChange, Int64)] = []
            for try await (dbHead, dbPurged, name, seq, deleted) in rows.decode((Int64, Int64, String?, Int64?, Bool?).self) {
                head = dbHead
                purged = dbPurged
                if let name, let seq, let deleted { zones.append((ZoneChange(zoneName: name, deleted: deleted), seq)) }
            }
            if let token, token.isExpired(purgedSeq: purged) || token.seq > head { throw CloudError.changeTokenExpired }
            // Every zone event has its own sequence number, so a page can end after any zone.
            let moreComing = zones.count > limit
            if moreComing { zones.removeLast() }
            let position = moreComing ? zones.last!.1 : head
            let firstFetchHead = moreComing ? (token.map(\.firstFetchHead) ?? head) : 0
            let next = self.token(.database, in: database, seq: position, horizon: purged, firstFetchHead: firstFetchHead)
            return DatabaseChanges(zones: zones.map(\.0), syncToken: next, moreComing: moreComing)
        }
    }

    func resultsLimit(_ requested: Int?) throws -> Int {
        guard let requested else { return self.limits.maxResultsLimit }
        guard requested > 0 else { throw CloudError.badRequest("resultsLimit must be at least 1") }
        return min(requested, self.limits.maxResultsLimit)
    }
}

/// Zones' ids, their databases' heads, their purge horizons and their own last changes, by database id and zone name,
/// for every poll that shares the read (`RecordStore.zoneHeads`). A record write moves the zone's `change_seq` in the
/// same statement as the rows (RecordStore+Modify), so in one snapshot "the zone's change_seq is at most the token's"
/// means exactly "no row after the token".
struct ZoneHeads: PostgresPreparedStatement {
    static var name: String { "ZoneHeads" }
    static let sql = """
        SELECT d.id, z.zone_name, z.id, d.change_seq, z.purged_seq, z.change_seq
        FROM unnest($1::bigint[], $2::text[]) AS k(database_id, zone_name)
        JOIN databases d ON d.id = k.database_id
        JOIN zones z ON z.database_id = d.id AND z.zone_name = k.zone_name AND NOT z.deleted
        """

    /// Zone names compare byte for byte (`ExactName`).
    struct Key: Hashable, Sendable {
        var databaseID: Int64
        var zoneName: ExactName

        init(databaseID: Int64, zoneName: String) { (self.databaseID, self.zoneName) = (databaseID, ExactName(zoneName)) }
    }

    struct Head: Sendable {
        var id: Int64
        /// The database's change head.
        var head: Int64
        var purgedSeq: Int64
        /// The zone's own last change.
        var changeSeq: Int64
    }

    typealias Row = (key: Key, head: Head)

    var keys: Set<Key>

    func makeBindings() throws -> PostgresBindings {
        let keys = Array(self.keys)
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(keys.map(\.databaseID))
        bindings.append(keys.map(\.zoneName.text))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (database, name, id, head, purged, changed) = try row.decode((Int64, String, Int64, Int64, Int64, Int64).self)
        return (Key(databaseID: database, zoneName: name), Head(id: id, head: head, purgedSeq: purged, changeSeq: changed))
    }
}

/// A page of a zone's changes after a position, with the zone, its database's head and its purge horizon, in one
/// snapshot (`RecordStore.changes`): the function `zone_then_changes` (migrations/0016), which keeps one plan of each
/// of its queries, where a statement was planned anew for every page at about the cost of reading its rows. Its first
/// row is the zone (the record columns null), each row after it a record.
struct ZoneChangesPage: PostgresPreparedStatement {
    static var name: String { "ZoneChangesPage" }
    static let sql = "SELECT * FROM zone_then_changes($1, $2, $3, $4, $5, $6, $7)"

    enum Row {
        case zone(ZoneHeads.Head)
        case record(RecordSnapshot)
    }

    var databaseID: Int64
    var zoneName: String
    var after: Int64
    var tombstonesAfter: Int64
    var recordTypes: [String]?
    var desiredKeys: [String]?
    var limit: Int

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(self.databaseID)
        bindings.append(self.zoneName)
        bindings.append(self.after)
        bindings.append(self.tombstonesAfter)
        bindings.append(self.recordTypes)
        bindings.append(self.desiredKeys)
        bindings.append(Int64(self.limit))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var cells = RowCells(row)
        if let record = try RecordStore.snapshot(from: &cells) { return .record(record) }
        return .zone(try Self.zone(row))
    }

    /// The page's zone row: one a page, its columns found by name, not by counting the record columns before them.
    static func zone(_ row: PostgresRow) throws -> ZoneHeads.Head {
        let zone = row.makeRandomAccess()
        func column(_ name: String) throws -> Int64 { try zone[name].decode(Int64.self, context: .default) }
        return ZoneHeads.Head(
            id: try column("zone_id"), head: try column("head"), purgedSeq: try column("purged_seq"), changeSeq: try column("zone_seq"))
    }
}

/// `ZoneChangesPage` with each record's stored answer (`records.answer`) in place of its fields and stamps: the function
/// `zone_then_answers` (migrations/0017). A page decodes five cells a record instead of eleven, and PostgreSQL renders
/// no fields as text.
struct ZoneAnswersPage: PostgresPreparedStatement {
    static var name: String { "ZoneAnswersPage" }
    static let sql = "SELECT * FROM zone_then_answers($1, $2, $3, $4, $5, $6)"

    typealias Row = ZoneChangesPage.Row

    var page: ZoneChangesPage

    init(_ page: ZoneChangesPage) { self.page = page }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(self.page.databaseID)
        bindings.append(self.page.zoneName)
        bindings.append(self.page.after)
        bindings.append(self.page.tombstonesAfter)
        bindings.append(self.page.recordTypes)
        bindings.append(Int64(self.page.limit))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var cells = RowCells(row)
        if let record = try RecordStore.snapshot(answeredFrom: &cells) { return .record(record) }
        return .zone(try ZoneChangesPage.zone(row))
    }
}
