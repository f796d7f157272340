import CloudCore
import Crypto
import SportsDomain
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
                    "legacyIds": stadium.legacyIds.map { FieldValue(type: .stringList, value: .array($0.map(JSONValue.string))) },
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
                    "abbreviation": alias.abbreviation.map(FieldValue.string),
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
        for achievement in self.achievements {
            guard AchievementEngine.Requirement(achievement.requirement, count: achievement.count) != nil else {
                throw CanonError(
                    "achievement \(achievement.id): requirement \(achievement.requirement) needs to be allVenues or venueCount with a count")
            }
            try add(
                achievement.id, "AchievementDefinition",
                [
                    "name": .string(achievement.name), "description": .string(achievement.description),
                    "requirement": .string(achievement.requirement), "count": achievement.count.map(FieldValue.int),
                    "league": achievement.leagueId.map(FieldValue.reference), "conference": achievement.conferenceId.map(FieldValue.reference),
                    "division": achievement.divisionId.map(FieldValue.reference),
                ])
        }
        var seen = Set<String>()
        for record in records where !seen.insert(record.recordName).inserted {
            throw CanonError("canonical id \(record.recordName) is used twice")
        }
        return records
    }
}

extension CanonicalDataset {
    /// The public zone that holds a league-season file's games: `mlb_2025` → `games_mlb_2025`.
    public static func gameZone(_ season: String) -> String { "games_" + season }

    /// Every game as a `Game` record, by zone. Games point at leagues, teams and venues of the dataset by id.
    /// - Throws: `CanonError` listing every game whose league, teams or venue the dataset lacks, every
    ///   malformed time or id, and ids used twice (nothing is imported).
    public func gameRecords() throws -> [String: [RecordDraft]] {
        let leagues = Set(self.leagues.map(\.id))
        let teams = Set(self.teams.map(\.id))
        let stadiums = Set(self.stadiums.map(\.id))
        var problems: [String] = []
        var seen = Set<String>()
        var zones: [String: [RecordDraft]] = [:]
        for (season, games) in self.games.sorted(by: { $0.key < $1.key }) {
            zones[Self.gameZone(season)] = games.compactMap { game in
                var missing: [String] = []
                if !CanonicalID.isValid(game.id) { missing.append("id is not a canonical id") }
                if !seen.insert(game.id).inserted { missing.append("id is used twice") }
                if !leagues.contains(game.leagueId) { missing.append("unknown league \(game.leagueId)") }
                for team in [game.homeTeamId, game.awayTeamId] where !teams.contains(team) { missing.append("unknown team \(team)") }
                if !stadiums.contains(game.stadiumId) { missing.append("unknown venue \(game.stadiumId)") }
                let start = GameTime.milliseconds(game.startTime)
                if start == nil { missing.append("startTime \(game.startTime) is not YYYY-MM-DDTHH:MM:SSZ") }
                // The same parser the game index reads it with, so an accepted day is never dropped there.
                if CivilDate(game.localDate) == nil { missing.append("localDate \(game.localDate) is not YYYY-MM-DD") }
                guard missing.isEmpty, let start else {
                    problems.append("\(season): \(game.id): " + missing.joined(separator: ", "))
                    return nil
                }
                let fields: [String: FieldValue?] = [
                    "canonicalId": .string(game.id), "uuid": .string(CanonicalID.uuid(for: game.id).uuidString),
                    "league": .reference(game.leagueId), "season": .int(game.season), "seasonLabel": .string(game.seasonLabel),
                    "gameType": .string(game.gameType), "startTime": FieldValue(type: .timestamp, value: .int(start)),
                    "timeTBD": .int(game.timeTBD ? 1 : 0), "localDate": .string(game.localDate),
                    "homeTeam": .reference(game.homeTeamId), "awayTeam": .reference(game.awayTeamId), "stadium": .reference(game.stadiumId),
                    "neutralSite": .int(game.neutralSite ? 1 : 0), "status": .string(game.status),
                    "homeScore": game.homeScore.map(FieldValue.int), "awayScore": game.awayScore.map(FieldValue.int),
                    "source": .string(game.source), "sourceGameId": game.sourceGameId.map(FieldValue.string),
                ]
                return RecordDraft(recordName: game.id, recordType: "Game", fields: fields.compactMapValues { $0 })
            }
        }
        guard problems.isEmpty else {
            let shown = problems.prefix(50).joined(separator: "; ")
            throw CanonError(
                "\(problems.count) game(s) cannot be imported; nothing was imported: \(shown)\(problems.count > 50 ? "; …" : "")")
        }
        return zones
    }
}

/// Game start times in the dataset: `YYYY-MM-DDTHH:MM:SSZ` (UTC).
public enum GameTime {
    /// Milliseconds since 1970, or nil when `text` is not that form or not a real time.
    public static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
            let minute = number(14..<16), let second = number(17..<19), (1...12).contains(month), (1...31).contains(day), hour < 24,
            minute < 60, second < 60, let days = CivilDate(year: year, month: month, day: day)?.daysSince1970
        else { return nil }
        return (Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000
    }
}

extension FieldValue {
    public static func string(_ text: String) -> FieldValue { FieldValue(type: .string, value: .string(text)) }
    public static func int(_ number: Int) -> FieldValue { FieldValue(type: .int64, value: .int(Int64(number))) }
    public static func reference(_ recordName: String) -> FieldValue { FieldValue(type: .reference, value: Reference(recordName: recordName).json) }

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
