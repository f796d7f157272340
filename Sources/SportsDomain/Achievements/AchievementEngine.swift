import CloudCore

/// Which achievements a person has earned, when, and by which visits, computed from their visits and the canonical
/// records alone (no I/O), so the server and every device reach the same answer.
///
/// The rules (the SportsTime seed's):
/// - A definition's scope is a league, conference or division; its venues on a day are the home venues of the
///   scope's teams that day (`TeamVenue` tenancies), so relocations and new venues need no new definitions.
/// - `allVenues` is earned on the first day a person has visited every venue of the scope as it stood that day;
///   `venueCount(n)` on the day of the n-th distinct venue of the scope.
/// - Earned is a fact about the past: a venue deprecated or demolished later never revokes it; deleting a visit
///   can (the answer is recomputed without it). A renamed venue keeps its canonical id, so it counts once.
/// - A visit counts for a scope only if its venue was a scope venue on the visit's day and, when the visit says
///   which sport it was for, that sport is the scope league's (a shared arena counts for the right league).
public struct AchievementEngine: Sendable {
    /// What a definition asks for.
    public enum Requirement: Sendable, Equatable {
        case allVenues
        case venueCount(Int)

        /// `allVenues`, or `venueCount` with a positive count; nil otherwise.
        public init?(_ name: String, count: Int?) {
            switch (name, count) {
            case ("allVenues", _): self = .allVenues
            case ("venueCount", let count?) where count > 0: self = .venueCount(count)
            default: return nil
            }
        }
    }

    /// An achievement definition (`AchievementDefinition` record).
    public struct Definition: Sendable {
        public var id: String
        public var requirement: Requirement
        public var league, conference, division: String?

        public init(id: String, requirement: Requirement, league: String? = nil, conference: String? = nil, division: String? = nil) {
            (self.id, self.requirement, self.league, self.conference, self.division) = (id, requirement, league, conference, division)
        }
    }

    /// A visit as the engine sees it.
    public struct Visit: Sendable {
        public var recordName: String
        public var stadium: String
        /// Milliseconds since 1970.
        public var date: Int64
        /// The sport the visit was for (`baseball`), when known.
        public var sport: String?

        public init(recordName: String, stadium: String, date: Int64, sport: String? = nil) {
            (self.recordName, self.stadium, self.date, self.sport) = (recordName, stadium, date, sport)
        }

        /// A `StadiumVisit` record's venue, day and sport; nil without a venue or a date.
        public init?(record: Record) {
            guard record.recordType == "StadiumVisit", !record.deleted, let stadium = record.fields["stadium"]?.value["recordName"]?.stringValue,
                let date = record.fields["visitDate"]?.value.int64Value
            else { return nil }
            self.init(recordName: record.recordName, stadium: stadium, date: date, sport: record.fields["sport"]?.value.stringValue)
        }
    }

    /// One earned achievement.
    public struct Earned: Sendable, Equatable {
        public var achievement: String
        /// The day (ms) of the visit that completed it.
        public var earnedAt: Int64
        /// The visits that earned it, oldest first: the first visit to each venue that counted.
        public var visits: [String]
    }

    public let definitions: [Definition]
    private let teams: [String: (league: String?, conference: String?, division: String?)]
    private let tenancies: [(team: String, stadium: String, from: Int64, until: Int64)]
    private let sports: [String: String]

    /// Reads definitions, leagues, teams and tenancies from the public database's canonical records.
    public init(records: [Record]) {
        var definitions: [Definition] = []
        var teams: [String: (league: String?, conference: String?, division: String?)] = [:]
        var tenancies: [(team: String, stadium: String, from: Int64, until: Int64)] = []
        var sports: [String: String] = [:]
        func reference(_ record: Record, _ field: String) -> String? { record.fields[field]?.value["recordName"]?.stringValue }
        for record in records where !record.deleted {
            switch record.recordType {
            case "AchievementDefinition":
                guard record.fields["deprecatedAt"] == nil,
                    let requirement = Requirement(
                        record.fields["requirement"]?.value.stringValue ?? "", count: record.fields["count"]?.value.int64Value.map { Int($0) })
                else { continue }
                definitions.append(
                    Definition(
                        id: record.recordName, requirement: requirement, league: reference(record, "league"),
                        conference: reference(record, "conference"), division: reference(record, "division")))
            case "League":
                sports[record.recordName] = record.fields["sport"]?.value.stringValue
            case "Team":
                teams[record.recordName] = (reference(record, "league"), reference(record, "conference"), reference(record, "division"))
            case "TeamVenue":
                guard let team = reference(record, "team"), let stadium = reference(record, "stadium") else { continue }
                tenancies.append(
                    (team, stadium, record.fields["validFrom"]?.value.int64Value ?? .min, record.fields["validUntil"]?.value.int64Value ?? .max))
            default: break
            }
        }
        self.definitions = definitions.sorted { $0.id < $1.id }
        (self.teams, self.tenancies, self.sports) = (teams, tenancies, sports)
    }

    /// Every achievement `visits` earn, by definition id.
    public func evaluate(_ visits: [Visit]) -> [Earned] {
        let ordered = visits.sorted { ($0.date, $0.recordName) < ($1.date, $1.recordName) }
        return self.definitions.compactMap { self.evaluate($0, ordered) }
    }

    func evaluate(_ definition: Definition, _ ordered: [Visit]) -> Earned? {
        var firstVisit: [String: Visit] = [:]
        for visit in ordered where self.counts(visit, for: definition) {
            if firstVisit[visit.stadium] == nil { firstVisit[visit.stadium] = visit }
            let earnedBy: [Visit]
            switch definition.requirement {
            case .venueCount(let count):
                guard firstVisit.count == count else { continue }
                earnedBy = Array(firstVisit.values)
            case .allVenues:
                let required = self.venues(of: definition, on: visit.date)
                guard !required.isEmpty, required.allSatisfy({ firstVisit[$0] != nil }) else { continue }
                earnedBy = required.compactMap { firstVisit[$0] }
            }
            let names = earnedBy.sorted { ($0.date, $0.recordName) < ($1.date, $1.recordName) }.map(\.recordName)
            return Earned(achievement: definition.id, earnedAt: visit.date, visits: names)
        }
        return nil
    }

    /// Whether a visit counts for a definition: any visit without a scope; else a visit to a scope venue that day,
    /// for the scope league's sport when the visit names one.
    func counts(_ visit: Visit, for definition: Definition) -> Bool {
        guard definition.league != nil || definition.conference != nil || definition.division != nil else { return true }
        if let sport = visit.sport, let league = definition.league, let leagueSport = self.sports[league], sport != leagueSport { return false }
        return self.venues(of: definition, on: visit.date).contains(visit.stadium)
    }

    /// The home venues of the definition's teams on `date` (ms).
    public func venues(of definition: Definition, on date: Int64) -> Set<String> {
        var venues = Set<String>()
        for tenancy in self.tenancies where tenancy.from <= date && date < tenancy.until {
            guard let team = self.teams[tenancy.team] else { continue }
            if let league = definition.league, team.league != league { continue }
            if let conference = definition.conference, team.conference != conference { continue }
            if let division = definition.division, team.division != division { continue }
            venues.insert(tenancy.stadium)
        }
        return venues
    }
}

extension AchievementEngine {
    /// The edits that make a person's `Achievement` records say what `earned` says: one record per definition, named
    /// by its id, so two devices that compute the same badge write the same record and converge. A badge no longer
    /// earned gets `revokedAt` (kept, so the revocation syncs); earned again, it loses it. A record of a definition
    /// this engine does not know (retired, or not synced yet) is left as it is.
    /// - Parameters:
    ///   - existing: the person's `Achievement` records by name.
    ///   - now: the time a revocation is stamped with.
    public func edits(earned: [Earned], existing: [String: Record], now: Int64) -> [(recordName: String, fields: [String: FieldValue?])] {
        var edits: [(recordName: String, fields: [String: FieldValue?])] = []
        var earnedNames = Set<String>()
        for badge in earned {
            earnedNames.insert(badge.achievement)
            let fields: [String: FieldValue?] = [
                "achievementId": FieldValue(type: .string, value: .string(badge.achievement)),
                "earnedAt": FieldValue(type: .timestamp, value: .int(badge.earnedAt)),
                "visits": FieldValue(
                    type: .referenceList, value: .array(badge.visits.map { Reference(recordName: $0, action: .none).json })),
                "revokedAt": nil,
            ]
            let current = existing[badge.achievement]
            let same = fields.allSatisfy { name, value in current?.fields[name] == value }
            if !same { edits.append((badge.achievement, fields)) }
        }
        let known = Set(self.definitions.map(\.id))
        for (name, record) in existing.sorted(by: { $0.key < $1.key })
        where known.contains(name) && !earnedNames.contains(name) && record.fields["revokedAt"] == nil && record.fields["earnedAt"] != nil {
            edits.append((name, ["revokedAt": FieldValue(type: .timestamp, value: .int(now))]))
        }
        return edits
    }
}
