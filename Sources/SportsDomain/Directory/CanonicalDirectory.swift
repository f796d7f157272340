import CloudCore
import Foundation

/// Answers "which venue or team is this name?" and "which venues are near this point?" from the canonical
/// records: the seed app's `canonicalId(forName:)`, `currentName` and `allNames`, and photo-to-venue matching.
public struct CanonicalDirectory: Sendable {
    /// One venue or team a name resolves to.
    public struct Resolution: Sendable, Equatable {
        public var canonicalId: String
        public var recordType: String
        public var currentName: String
        /// Every name it has had, oldest first, the current one last.
        public var allNames: [String]
        public var matchedName: String
    }

    /// How sure a proximity match is: within 500 m, 2 km or 5 km.
    public enum Confidence: String, Sendable { case high, medium, low }

    /// A venue near a point.
    public struct Nearby: Sendable, Equatable {
        public var canonicalId: String
        public var name: String
        public var distanceMeters: Double
        public var confidence: Confidence
    }

    struct Entity {
        var record: Record
        var names: [(name: String, from: Int64?, until: Int64?)] = []
        /// A team's abbreviations of the past and present, dated by their aliases.
        var abbreviations: [(abbreviation: String, from: Int64?, until: Int64?)] = []
    }

    private var entities: [String: Entity] = [:]
    /// Normalized name → (canonical id, validity).
    private var byName: [String: [(id: String, name: String, from: Int64?, until: Int64?)]] = [:]
    private var stadiums: [Record] = []

    /// Builds the directory from the public database's canonical records.
    public init(records: [Record]) {
        for record in records where !record.deleted && (record.recordType == "Stadium" || record.recordType == "Team") {
            self.entities[record.recordName] = Entity(record: record)
            if record.recordType == "Stadium" { self.stadiums.append(record) }
        }
        for record in records where !record.deleted && (record.recordType == "StadiumAlias" || record.recordType == "TeamAlias") {
            let ownerField = record.recordType == "StadiumAlias" ? "stadium" : "team"
            guard let owner = record.fields[ownerField]?.value["recordName"]?.stringValue, self.entities[owner] != nil,
                let name = record.fields["name"]?.value.stringValue
            else { continue }
            let (from, until) = (record.fields["validFrom"]?.value.int64Value, record.fields["validUntil"]?.value.int64Value)
            self.entities[owner]!.names.append((name, from, until))
            if let abbreviation = record.fields["abbreviation"]?.value.stringValue {
                self.entities[owner]!.abbreviations.append((abbreviation, from, until))
            }
            // A team also answers to its city and abbreviation of the time ("Oakland", "OAK"), dated like its name;
            // they find it, but never become its display name.
            for field in ["city", "abbreviation"] {
                if let other = record.fields[field]?.value.stringValue {
                    self.byName[Self.normalize(other), default: []].append((owner, other, from, until))
                }
            }
        }
        // A venue or team is also found by its UUID and by the ids an old app install holds for it (the seed's
        // `stadiumUUIDs`), so an existing user's visits can be moved to canonical ids.
        for (id, entity) in self.entities {
            let ids =
                [entity.record.fields["uuid"]?.value.stringValue].compactMap { $0 }
                + (entity.record.fields["legacyIds"]?.value.arrayValue?.compactMap(\.stringValue) ?? [])
            for other in ids { self.byName[Self.normalize(other), default: []].append((id, other, nil, nil)) }
        }
        for (id, entity) in self.entities {
            var names = entity.names
            if let current = entity.record.fields["name"]?.value.stringValue, !names.contains(where: { $0.name == current }) {
                names.append((current, nil, nil))
            }
            for name in names { self.byName[Self.normalize(name.name), default: []].append((id, name.name, name.from, name.until)) }
            self.entities[id]!.names = names.sorted { ($0.from ?? .min, $0.until ?? .max) < ($1.from ?? .min, $1.until ?? .max) }
        }
    }

    /// Case-, accent- and spacing-insensitive form of a name.
    public static func normalize(_ name: String) -> String {
        name.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The venues and teams `name` stands for (on `date`, ms, when given: only names valid then).
    public func resolve(_ name: String, on date: Int64? = nil) -> [Resolution] {
        let matches = (self.byName[Self.normalize(name)] ?? []).filter { match in
            guard let date else { return true }
            return (match.from ?? .min) <= date && date < (match.until ?? .max)
        }
        var seen = Set<String>()
        return matches.compactMap { match -> Resolution? in
            guard seen.insert(match.id).inserted, let entity = self.entities[match.id] else { return nil }
            return Resolution(
                canonicalId: match.id, recordType: entity.record.recordType,
                currentName: entity.record.fields["name"]?.value.stringValue ?? match.name,
                allNames: entity.names.map(\.name), matchedName: match.name)
        }.sorted { $0.canonicalId < $1.canonicalId }
    }

    /// The name a venue or team had on `date` (ms), or its current name; nil for an unknown id.
    public func name(of id: String, on date: Int64? = nil) -> String? {
        guard let entity = self.entities[id] else { return nil }
        if let date, let named = entity.names.last(where: { ($0.from ?? .min) <= date && date < ($0.until ?? .max) }) { return named.name }
        return entity.record.fields["name"]?.value.stringValue
    }

    /// A team's abbreviation on `date` (ms): its alias's of that date ("OAK" in 2019), else its current one.
    public func abbreviation(of team: String, on date: Int64? = nil) -> String? {
        guard let entity = self.entities[team] else { return nil }
        if let date, let dated = entity.abbreviations.last(where: { ($0.from ?? .min) <= date && date < ($0.until ?? .max) }) {
            return dated.abbreviation
        }
        return entity.record.fields["abbreviation"]?.value.stringValue
    }

    /// The live `Stadium` or `Team` record with this canonical id.
    public func record(_ id: String) -> Record? { self.entities[id]?.record }

    /// Venues within `radius` metres of a point, nearest first. With a date (ms), venues active then (opened
    /// by that year, not yet deprecated); without one, venues active now. `sport` filters on the venue's sports.
    public func nearby(latitude: Double, longitude: Double, radius: Double = 5000, sport: String? = nil, on date: Int64? = nil) -> [Nearby] {
        let year = date.map {
            Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date(timeIntervalSince1970: Double($0) / 1000))
                .year ?? 0
        }
        return self.stadiums.compactMap { stadium -> Nearby? in
            guard let location = stadium.fields["location"]?.value, let lat = location["latitude"]?.doubleValue,
                let lon = location["longitude"]?.doubleValue
            else { return nil }
            let deprecatedAt = stadium.fields["deprecatedAt"]?.value.int64Value
            if let date {
                if let deprecatedAt, date > deprecatedAt + 86_400_000 { return nil }
                if let opened = stadium.fields["yearOpened"]?.value.int64Value, let year, Int64(year) < opened { return nil }
            } else if deprecatedAt != nil {
                return nil
            }
            if let sport, !(stadium.fields["sports"]?.value.arrayValue?.contains(.string(sport)) ?? false) { return nil }
            let distance = Geo.distanceMeters((latitude, longitude), (lat, lon))
            guard distance <= radius else { return nil }
            let confidence: Confidence = distance < 500 ? .high : distance < 2000 ? .medium : .low
            return Nearby(
                canonicalId: stadium.recordName, name: stadium.fields["name"]?.value.stringValue ?? stadium.recordName, distanceMeters: distance,
                confidence: confidence)
        }.sorted { $0.distanceMeters < $1.distanceMeters }
    }
}
