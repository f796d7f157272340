import CloudCore
import CloudPostgres
import CloudRuntime
import Logging
import SportsDomain

/// The checks on a person's own records against the canonical data (bad input gets a clear error): a visit for a sport its
/// venue never hosted, a visit naming a game played at another venue, an achievement record that matches no
/// definition. Each is refused alone, with a reason, and nothing of it is written.
extension CanonicalEndpoints: WriteRules {
    public var recordTypes: Set<String> { ["StadiumVisit", "Achievement", TripPolls.pollType, TripPolls.voteType] }

    public func check(writesTo database: DatabaseRef, zone: String, container: String, environment: String, logger: Logger) async throws -> (
        @Sendable (Record) -> CloudError?
    )? {
        guard database.scope == .private else {
            // Votes are checked against the poll of their zone (its options, its closing time).
            let stored =
                UnlistedZone.contains(zone)
                ? try await self.records.lookup([(TripPolls.pollRecordName, ["options", "closesAt"])], zoneName: zone, in: database, logger: logger)
                    .first ?? nil : nil
            let poll = stored.flatMap { $0.deleted ? nil : TripPolls.Poll(fieldsJSON: $0.fieldsJSON) }
            let now = self.records.clock.now
            return { record in TripPolls.refusal(of: record, in: zone, poll: poll, now: now) }
        }
        let canonical = try await self.records.database(container: container, environment: environment, scope: .public, owner: nil, logger: logger)
        let catalog = try await self.catalog(for: canonical, logger: logger)
        return { record in Self.refusal(of: record, catalog) }
    }

    /// Why `record` cannot be saved, or nil. What the canonical data does not know (a venue or game not imported) is
    /// not refused: the rules check against the data, they do not require it.
    static func refusal(of record: Record, _ catalog: CanonicalCatalog) -> CloudError? {
        func reference(_ field: String) -> String? { record.fields[field]?.value["recordName"]?.stringValue }
        switch record.recordType {
        case "StadiumVisit":
            guard let stadium = reference("stadium") else { return nil }
            if let sport = record.fields["sport"]?.value.stringValue, let venue = catalog.directory.record(stadium),
                let sports = venue.fields["sports"]?.value.arrayValue?.compactMap(\.stringValue), !sports.contains(sport)
            {
                return .badRequest(
                    "visit \(record.recordName): \(stadium) never hosted \(sport) (it hosts \(sports.joined(separator: ", "))); set the visit's sport to one of them"
                )
            }
            if let gameID = reference("game"), let game = catalog.games.game(gameID), game.stadium != stadium {
                return .badRequest("visit \(record.recordName): game \(gameID) was played at \(game.stadium), not at \(stadium)")
            }
        case "Achievement" where !catalog.achievements.isEmpty:
            guard catalog.achievements.contains(record.recordName) else {
                return .badRequest(
                    "achievement \(record.recordName) matches no achievement definition: an Achievement record is named by its definition's id")
            }
            if let id = record.fields["achievementId"]?.value.stringValue, id != record.recordName {
                return .badRequest("achievement \(record.recordName): achievementId \(id) must be the record's own name")
            }
        default: break
        }
        return nil
    }
}
