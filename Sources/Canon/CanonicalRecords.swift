import CloudCore
import Crypto
import Foundation

/// Canonical ids and the UUIDs derived from them.
public enum CanonicalID {
    /// A UUID derived from SHA-256 of the canonical id (RFC 9562 version 8), so every client agrees on it.
    public static func uuid(for canonicalID: String) -> UUID {
        var bytes = Array(SHA256.hash(data: Array(canonicalID.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// Canonical ids are lowercase words joined by `_`, starting with their kind (`stadium_mlb_oracle_park`).
    public static func isValid(_ id: String) -> Bool {
        id.range(of: #"^[a-z]+(_[a-z0-9]+)+$"#, options: .regularExpression) != nil
    }
}

extension CanonicalDataset {
    /// Every record the dataset describes as the source wants it, in a stable order (leagues first, aliases last).
    /// Long because it is one list, record type by record type, of how the dataset maps onto the schema.
    public func records() throws -> [RecordDraft] {
        var records: [RecordDraft] = []
        func add(_ id: String, _ type: String, _ fields: [String: FieldValue?]) throws {
            guard CanonicalID.isValid(id) else { throw CanonError("\(type) id \(id) is not a canonical id (lowercase words joined by _)") }
            var all = fields.compactMapValues { $0 }
            all["canonicalId"] = FieldValue(type: .string, value: .string(id))
            all["uuid"] = FieldValue(type: .string, value: .string(CanonicalID.uuid(for: id).uuidString))
            records.append(RecordDraft(recordName: id, recordType: type, fields: all))
        }
        for league in self.leagues {
            try add(
                league.id, "League", ["name": .string(league.name), "abbreviation": .string(league.abbreviation), "sport": .string(league.sport)])
        }
        for conference in self.conferences {
            try add(conference.id, "Conference", ["name": .string(conference.name), "league": .reference(conference.leagueId)])
        }
        for division in self.divisions {
            try add(
                division.id, "Division",
                [
                    "name": .string(division.name), "league": .reference(division.leagueId),
                    "conference": division.conferenceId.map(FieldValue.reference),
                ])
        }
        for stadium in self.stadiums {
            try add(
                stadium.id, "Stadium",
                [
                    "name": .string(stadium.name), "city": .string(stadium.city), "state": stadium.state.map(FieldValue.string),
                    "country": .string(stadium.country), "timeZone": .string(stadium.timeZone),
                    "location": FieldValue(type: .location, value: ["latitude": .double(stadium.latitude), "longitude": .double(stadium.longitude)]),
                    "capacity": stadium.capacity.map(FieldValue.int), "yearOpened": stadium.yearOpened.map(FieldValue.int),
                    "deprecatedAt": try stadium.deprecatedAt.map(FieldValue.date),
                    "sports": FieldValue(type: .stringList, value: .array(stadium.sports.map(JSONValue.string))),
                ])
        }
        for team in self.teams {
            try add(
                team.id, "Team",
                [
                    "name": .string(team.name), "city": .string(team.city), "abbreviation": team.abbreviation.map(FieldValue.string),
                    "league": .reference(team.leagueId), "conference": team.conferenceId.map(FieldValue.reference),
                    "division": team.divisionId.map(FieldValue.reference), "homeStadium": .reference(team.homeStadiumId),
                    "yearFounded": team.yearFounded.map(FieldValue.int), "firstSeason": team.firstSeason.map(FieldValue.int),
                ])
        }
        for alias in self.stadiumAliases {
            try add(
                alias.id, "StadiumAlias",
                [
                    "stadium": .reference(alias.stadiumId), "name": .string(alias.name),
                    "validFrom": try alias.validFrom.map(FieldValue.date), "validUntil": try alias.validUntil.map(FieldValue.date),
                ])
        }
        for alias in self.teamAliases {
            try add(
                alias.id, "TeamAlias",
                [
                    "team": .reference(alias.teamId), "name": .string(alias.name), "city": alias.city.map(FieldValue.string),
                    "validFrom": try alias.validFrom.map(FieldValue.date), "validUntil": try alias.validUntil.map(FieldValue.date),
                ])
        }
        for tenancy in self.teamVenues {
            try add(
                tenancy.id, "TeamVenue",
                [
                    "team": .reference(tenancy.teamId), "stadium": .reference(tenancy.stadiumId),
                    "validFrom": try tenancy.validFrom.map(FieldValue.date), "validUntil": try tenancy.validUntil.map(FieldValue.date),
                ])
        }
        var seen = Set<String>()
        for record in records where !seen.insert(record.recordName).inserted {
            throw CanonError("canonical id \(record.recordName) is used twice")
        }
        return records
    }
}

extension FieldValue {
    static func string(_ text: String) -> FieldValue { FieldValue(type: .string, value: .string(text)) }
    static func int(_ number: Int) -> FieldValue { FieldValue(type: .int64, value: .int(Int64(number))) }
    static func reference(_ recordName: String) -> FieldValue { FieldValue(type: .reference, value: Reference(recordName: recordName).json) }

    /// A `YYYY-MM-DD` date as a TIMESTAMP at midnight UTC.
    static func date(_ text: String) throws -> FieldValue {
        FieldValue(type: .timestamp, value: .int(try CanonicalDate.milliseconds(text)))
    }
}

/// Dates in the dataset are `YYYY-MM-DD`, read as midnight UTC.
public enum CanonicalDate {
    public static func milliseconds(_ text: String) throws -> Int64 {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false).compactMap { Int($0) }
        guard parts.count == 3, (1000...9999).contains(parts[0]),
            let date = DateComponents(calendar: Self.calendar, year: parts[0], month: parts[1], day: parts[2]).date
        else {
            throw CanonError("\(text) is not a YYYY-MM-DD date between the years 1000 and 9999")
        }
        return Int64(date.timeIntervalSince1970 * 1000)
    }

    /// Milliseconds from the year 1000 to the end of 9999: every date a venue or alias can have, and far from
    /// the bounds where date arithmetic overflows.
    public static let supported: ClosedRange<Int64> = -30_610_224_000_000...253_402_300_799_999

    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}
