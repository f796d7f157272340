import CloudCore
import CloudPostgres
import CloudRuntime
import Logging
import SportsDomain

/// The checks on a person's own records against the canonical data (bad input gets a clear error): a visit for a sport its
/// venue never hosted, a visit naming a game played at another venue, an achievement record that matches no
/// definition, cites visits the account does not have, or is not earned by them. Each is refused alone, with a
/// reason, and nothing of it is written. After visits are deleted, the account's badges are recomputed.
extension CanonicalEndpoints: WriteRules {
    public var recordTypes: Set<String> { ["StadiumVisit", "Achievement", TripPolls.pollType, TripPolls.voteType] }

    public func check(
        _ operations: [RecordOperation], writesTo database: DatabaseRef, zone: String, container: String, environment: String, logger: Logger
    ) async throws -> BatchCheck? {
        guard database.scope == .private else {
            // Votes are checked against the poll of their zone (its options, its closing time).
            let stored =
                UnlistedZone.contains(zone)
                ? try await self.records.sharedLookup(
                    TripPolls.pollRecordName, desiredKeys: ["options", "closesAt"], zoneName: zone, in: database, logger: logger) : nil
            let poll = stored.flatMap { $0.deleted ? nil : TripPolls.Poll(fieldsJSON: $0.fieldsJSON) }
            let now = self.records.clock.now
            return { writes in Self.refusals(of: writes) { TripPolls.refusal(of: $0, in: zone, poll: poll, now: now) } }
        }
        let canonical = try await self.records.database(container: container, environment: environment, scope: .public, owner: nil, logger: logger)
        let catalog = try await self.catalog(for: canonical, logger: logger)
        // A badge is checked against the visits of its zone (a reference names a record of its own zone): read them
        // only for a batch that may save one, not for every visit saved.
        let savesBadges = operations.contains { !$0.type.isDelete && ($0.recordType ?? "Achievement") == "Achievement" }
        let stored =
            savesBadges && !catalog.achievementEngine.definitions.isEmpty
            ? try await self.records.records(ofTypes: ["StadiumVisit"], in: database, zone: zone, logger: logger) : []
        return { writes in
            var visits = Dictionary(stored.map { ($0.recordName, $0) }, uniquingKeysWith: { _, last in last })
            for write in writes where write.deleted || write.recordType == "StadiumVisit" { visits[write.recordName] = write.deleted ? nil : write }
            let account = Visits(records: visits)
            return Self.refusals(of: writes) { Self.refusal(of: $0, catalog, visits: account) }
        }
    }

    /// After visits are deleted, the badges of their zone are recomputed and corrected (revoked, or earned by other
    /// visits) by the same engine the devices run, so the server and every device agree without waiting for a
    /// device to sync. Badges nobody saved yet are left to the devices. A failure is logged: the next device sync
    /// corrects the same badges.
    public func didWrite(
        _ outcomes: [OperationOutcome], to database: DatabaseRef, zone: String, container: String, environment: String, logger: Logger
    ) async {
        guard database.scope == .private,
            outcomes.contains(where: { if case .deleted(_, "StadiumVisit") = $0 { true } else { false } })
        else { return }
        do {
            let canonical = try await self.records.database(
                container: container, environment: environment, scope: .public, owner: nil, logger: logger)
            let engine = try await self.catalog(for: canonical, logger: logger).achievementEngine
            guard !engine.definitions.isEmpty else { return }
            let stored = try await self.records.records(ofTypes: ["StadiumVisit", "Achievement"], in: database, zone: zone, logger: logger)
            let badges = Dictionary(stored.filter { $0.recordType == "Achievement" }.map { ($0.recordName, $0) }, uniquingKeysWith: { _, last in last })
            let earned = engine.evaluate(stored.compactMap(AchievementEngine.Visit.init(record:)))
            let corrections = engine.edits(earned: earned, existing: badges, now: self.records.clock.now).compactMap { edit -> RecordOperation? in
                guard let badge = badges[edit.recordName] else { return nil }
                let fields = edit.fields.compactMapValues { $0 }.mapValues(\.json)
                return RecordOperation(type: .update, recordName: edit.recordName, recordType: "Achievement", changeTag: badge.changeTag, fields: fields)
            }
            guard !corrections.isEmpty else { return }
            let stamp = ChangeStamp(timestamp: self.records.clock.now, userRecordName: database.ownerRecordName, deviceID: "_achievements")
            // A device that wrote the badge meanwhile gets its CONFLICT answered by its own recomputation: same engine.
            _ = try await self.records.modify(corrections, zoneName: zone, atomic: false, in: database, stamp: stamp, logger: logger)
        } catch {
            logger.warning("badges not recomputed after visits were deleted; the next device sync will", metadata: ["error": "\(error)"])
        }
    }

    /// A zone's visits as the achievement engine reads them.
    struct Visits {
        var names: Set<String>
        var engineVisits: [AchievementEngine.Visit]

        init(records: [String: Record]) {
            self.names = Set(records.keys)
            self.engineVisits = records.values.compactMap(AchievementEngine.Visit.init(record:))
        }
    }

    static func refusals(of writes: [Record], _ refusal: (Record) -> CloudError?) -> [String: CloudError] {
        var refused: [String: CloudError] = [:]
        for record in writes where !record.deleted { refused[record.recordName] = refusal(record) }
        return refused
    }

    /// Why `record` cannot be saved, or nil. What the canonical data does not know (a venue or game not imported) is
    /// not refused: the rules check against the data, they do not require it.
    static func refusal(of record: Record, _ catalog: CanonicalCatalog, visits: Visits) -> CloudError? {
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
            return Self.badgeRefusal(of: record, catalog.achievementEngine, visits: visits)
        default: break
        }
        return nil
    }

    /// An earned badge (with `earnedAt`, without `revokedAt`) must cite only visits of its zone, and those visits must
    /// earn it by the engine the devices run (so a venue demolished later still counts). A revoked or unearned one
    /// claims nothing.
    static func badgeRefusal(of record: Record, _ engine: AchievementEngine, visits: Visits) -> CloudError? {
        guard record.fields["earnedAt"] != nil, record.fields["revokedAt"] == nil else { return nil }
        let cited = record.fields["visits"]?.value.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? []
        if let foreign = cited.first(where: { !visits.names.contains($0) }) {
            return .badRequest(
                "achievement \(record.recordName) cites visit \(foreign), which is not a visit of this account in this zone: save the visit first, or cite only the account's own visits"
            )
        }
        guard engine.evaluate(visits.engineVisits).contains(where: { $0.achievement == record.recordName }) else {
            return .badRequest(
                "achievement \(record.recordName) is not earned by this account's \(visits.engineVisits.count) visit(s) in this zone (the SDK's achievement engine decides): save the visits that earn it first, or save it with revokedAt"
            )
        }
        return nil
    }
}
