import CloudCore
import CloudSync
import Foundation
import SportsDomain

/// A league (`league_mlb`).
public struct League: Sendable, Equatable {
    public var id, name, abbreviation, sport: String
}

/// A conference or, with `conferenceID`, a division of a league.
public struct LeagueGroup: Sendable, Equatable {
    public var id, name, leagueID: String
    public var conferenceID: String?
}

/// A canonical team.
public struct Team: Sendable, Equatable {
    public var id, name, city, leagueID: String
    public var abbreviation, conferenceID, divisionID, homeStadiumID: String?
    public var isDeprecated: Bool
}

/// How far a person is through a league, conference or division: its venues as they stand on a day, visited or not.
public struct VenueProgress: Sendable, Equatable {
    public var visited: [String]
    public var remaining: [String]
    public var total: Int { self.visited.count + self.remaining.count }
}

/// Typed, offline readers of the synced canonical data, and the same identity and proximity answers the server's
/// `canonical/resolve` and `canonical/nearby` give (one `CanonicalDirectory`, in SportsDomain, serves both).
extension StadiumCloudClient {
    public func leagues() throws -> [League] {
        try self.store.records(ofType: "League", scope: .public).filter { $0.fields["deprecatedAt"] == nil }.map { record in
            League(
                id: record.recordName, name: Self.text(record, "name"), abbreviation: Self.text(record, "abbreviation"),
                sport: Self.text(record, "sport"))
        }.sorted { $0.name < $1.name }
    }

    /// The conferences of a league (all without one).
    public func conferences(inLeague league: String? = nil) throws -> [LeagueGroup] {
        try self.groups("Conference", league: league, conference: nil)
    }

    /// The divisions of a league or conference (all without either).
    public func divisions(inLeague league: String? = nil, conference: String? = nil) throws -> [LeagueGroup] {
        try self.groups("Division", league: league, conference: conference)
    }

    /// Teams, by name; deprecated ones only when asked for.
    public func teams(inLeague league: String? = nil, division: String? = nil, includingDeprecated: Bool = false) throws -> [Team] {
        try self.store.records(ofType: "Team", scope: .public).map { record in
            Team(
                id: record.recordName, name: Self.text(record, "name"), city: Self.text(record, "city"), leagueID: record.reference("league") ?? "",
                abbreviation: record.fields["abbreviation"]?.value.stringValue, conferenceID: record.reference("conference"),
                divisionID: record.reference("division"), homeStadiumID: record.reference("homeStadium"),
                isDeprecated: record.fields["deprecatedAt"] != nil)
        }.filter { team in
            (includingDeprecated || !team.isDeprecated) && (league == nil || team.leagueID == league)
                && (division == nil || team.divisionID == division)
        }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Venues, by name: current ones, or every one including those the operator deprecated (closed, or left).
    public func venues(includingDeprecated: Bool = false) throws -> [Stadium] {
        try self.stadiums().filter { includingDeprecated || !$0.isDeprecated }
    }

    /// Venues and teams a name stands for, from current and former names, a team's city and abbreviation of the
    /// time; with `date` (ms), only names valid then. Offline.
    public func resolve(_ name: String, on date: Int64? = nil) throws -> [CanonicalDirectory.Resolution] {
        try self.directory().resolve(name, on: date)
    }

    /// The canonical venue id for an id an old install of the app holds (the seed's per-stadium UUIDs, or the
    /// venue's canonical UUID): what moves an existing person's visits to canonical ids. Offline.
    public func canonicalStadiumID(forLegacyID legacyID: String) throws -> String? {
        try self.directory().resolve(legacyID).first { $0.recordType == "Stadium" }?.canonicalId
    }

    /// Venues near a point, nearest first (see `CanonicalDirectory.nearby`). Offline.
    public func nearby(latitude: Double, longitude: Double, radius: Double = 5000, sport: String? = nil, on date: Int64? = nil) throws
        -> [CanonicalDirectory.Nearby]
    {
        try self.directory().nearby(latitude: latitude, longitude: longitude, radius: radius, sport: sport, on: date)
    }

    /// The person's progress through a league, conference or division: the venues of its teams on `date` (default
    /// now), and which of them the person's visits reached (a visit to a renamed venue counts: ids do not change).
    public func progress(league: String, conference: String? = nil, division: String? = nil, on date: Int64? = nil) throws -> VenueProgress {
        let engine = try self.achievementEngine()
        let venues = engine.venues(
            of: AchievementEngine.Definition(id: "", requirement: .allVenues, league: league, conference: conference, division: division),
            on: date ?? Int64(Date().timeIntervalSince1970 * 1000))
        let visited = Set(try self.visits().map(\.stadiumID))
        return VenueProgress(visited: venues.filter(visited.contains).sorted(), remaining: venues.subtracting(visited).sorted())
    }

    func groups(_ type: String, league: String?, conference: String?) throws -> [LeagueGroup] {
        try self.store.records(ofType: type, scope: .public).filter { $0.fields["deprecatedAt"] == nil }.map { record in
            LeagueGroup(
                id: record.recordName, name: Self.text(record, "name"), leagueID: record.reference("league") ?? "",
                conferenceID: record.reference("conference"))
        }.filter { (league == nil || $0.leagueID == league) && (conference == nil || $0.conferenceID == conference) }
            .sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    func directory() throws -> CanonicalDirectory {
        CanonicalDirectory(
            records: try ["Stadium", "Team", "StadiumAlias", "TeamAlias"].flatMap { try self.store.records(ofType: $0, scope: .public) }
                .map(Self.record(from:)))
    }

    func achievementEngine() throws -> AchievementEngine {
        AchievementEngine(
            records: try ["AchievementDefinition", "League", "Team", "TeamVenue"].flatMap { try self.store.records(ofType: $0, scope: .public) }
                .map(Self.record(from:)))
    }

    static func text(_ record: LocalRecord, _ field: String) -> String { record.fields[field]?.value.stringValue ?? "" }
}
