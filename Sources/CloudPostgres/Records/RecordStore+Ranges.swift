import CloudCore
import Logging
import PostgresNIO

/// A listed public zone's position: its last change and its purge horizon (changes at or before it may be gone).
public struct ZoneVersion: Sendable, Equatable {
    public var zoneName: String
    public var head: Int64
    public var horizon: Int64
}

/// What the cacheable reads of public zones need (docs/SCALING.md, "Caches in front"): positions as plain change
/// numbers, so that the same question from any device is the same URL.
extension RecordStore {
    /// Every listed zone of the database with its last change and purge horizon.
    public func zoneVersions(in database: DatabaseRef, logger: Logger) async throws -> [ZoneVersion] {
        try await self.client.reading { connection in
            var versions: [ZoneVersion] = []
            for try await (name, head, horizon) in try await connection.query(
                """
                SELECT zone_name, change_seq, purged_seq FROM zones
                WHERE database_id = \(database.id) AND NOT deleted AND NOT starts_with(zone_name, \(UnlistedZone.prefix)) ORDER BY zone_name
                """, logger: logger
            ).decode((String, Int64, Int64).self) { versions.append(ZoneVersion(zoneName: name, head: head, horizon: horizon)) }
            return versions
        }
    }

    /// The zone's changes numbered after `from` up to `to`, live and deleted, in change order, at most `limit`; the
    /// second value is where they end (`to`, or the last one's number when the limit cut them). `to` must not be past
    /// the database's head, read in the same statement as the rows: every change up to it has committed (writers hold
    /// the database's lock until they commit, docs/SYNC.md), so nothing in the range is missing. CHANGE_TOKEN_EXPIRED
    /// when `from` is before the zone's purge horizon (deletions from then may be gone). The records come as their
    /// stored answers (`RecordSnapshot.storedAnswer`): ranges only go into responses.
    public func changes(
        zoneName: String, after from: Int64, upTo to: Int64, limit: Int, in database: DatabaseRef, logger: Logger
    ) async throws -> (records: [RecordSnapshot], end: Int64) {
        guard from >= 0, to >= from else { throw CloudError.badRequest("from must be at least 0 and to at least from") }
        return try await self.client.reading { connection in
            var builder = SQLBuilder()
            builder.append(
                """
                SELECT h.head, h.purged_seq, r.* FROM (
                    SELECT z.id, d.change_seq AS head, z.purged_seq FROM databases d JOIN zones z ON z.database_id = d.id
                    WHERE d.id = \(builder.bind(database.id)) AND z.zone_name = \(builder.bind(zoneName)) AND NOT z.deleted) h
                LEFT JOIN LATERAL (
                    SELECT \(Self.answerColumns) FROM records r
                    WHERE r.zone_id = h.id AND r.change_seq > \(builder.bind(from)) AND r.change_seq <= \(builder.bind(to))
                    ORDER BY r.change_seq LIMIT \(builder.bind(limit + 1))) r ON true
                """)
            var zone: (head: Int64, horizon: Int64)?
            var records: [RecordSnapshot] = []
            for try await row in try await connection.query(builder.query, logger: logger) {
                var cells = RowCells(row)
                zone = (try cells.next(), try cells.next())
                if let record = try Self.snapshot(answeredFrom: &cells) { records.append(record) }
            }
            guard let zone else { throw CloudError.zoneNotFound(zoneName) }
            guard from >= zone.horizon else { throw CloudError.changeTokenExpired }
            guard to <= zone.head else { throw CloudError.badRequest("to (\(to)) is past the last change (\(zone.head)); ask the versions document") }
            guard records.count > limit else { return (records, to) }
            records.removeLast()
            return (records, records.last!.changeSeq)
        }
    }
}
