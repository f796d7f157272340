import Canon
import CloudCore
import Foundation
import Testing

/// The shipped dataset: every team has a venue with coordinates and a time zone, every reference resolves,
/// the alias ranges of one venue or team do not overlap, and ids follow the canonical format.
@Suite struct DatasetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let dataset = Result { try CanonicalDataset.load(from: root.appendingPathComponent("Resources/canonical").path, gameSeasons: []) }

    @Test func everyTeamHasAVenueWithCoordinatesAndATimeZone() throws {
        let dataset = try Self.dataset.get()
        let stadiums = Dictionary(uniqueKeysWithValues: dataset.stadiums.map { ($0.id, $0) })
        for team in dataset.teams {
            let venue = try #require(stadiums[team.homeStadiumId], "\(team.id) has no venue \(team.homeStadiumId)")
            #expect((-90...90).contains(venue.latitude) && (-180...180).contains(venue.longitude) && !(venue.latitude == 0 && venue.longitude == 0))
            #expect(TimeZone(identifier: venue.timeZone) != nil, "\(venue.id) has an unknown time zone \(venue.timeZone)")
        }
    }

    @Test func everyReferenceResolvesAndIdsAreCanonical() throws {
        let dataset = try Self.dataset.get()
        let records = try dataset.records()
        let names = Set(records.map(\.recordName))
        for record in records {
            #expect(CanonicalID.isValid(record.recordName))
            for reference in Reference.all(in: record.fields) {
                #expect(names.contains(reference.recordName), "\(record.recordName) points at missing \(reference.recordName)")
            }
        }
        #expect(Set(dataset.leagues.map(\.abbreviation)) == ["MLB", "NBA", "NHL", "NFL", "MLS", "WNBA", "NWSL"])
    }

    @Test func aliasRangesOfOneVenueOrTeamDoNotOverlap() throws {
        let dataset = try Self.dataset.get()
        let ranges =
            dataset.stadiumAliases.map { ($0.stadiumId, $0.validFrom, $0.validUntil) }
            + dataset.teamAliases.map { ($0.teamId, $0.validFrom, $0.validUntil) }
        for (owner, group) in Dictionary(grouping: ranges, by: \.0) {
            let sorted = try group.map { (try $0.1.map(CanonicalDate.milliseconds) ?? .min, try $0.2.map(CanonicalDate.milliseconds) ?? .max) }.sorted
            { $0.0 < $1.0 }
            for (earlier, later) in zip(sorted, sorted.dropFirst()) {
                #expect(earlier.1 <= later.0, "alias ranges of \(owner) overlap")
            }
        }
    }

    @Test func theSeedScenariosAreRealData() throws {
        let dataset = try Self.dataset.get()
        let oracle = dataset.stadiumAliases.filter { $0.stadiumId == "stadium_mlb_oracle_park" }.map(\.name)
        #expect(["SBC Park", "AT&T Park", "Oracle Park"].allSatisfy(oracle.contains))
        #expect(dataset.stadiumAliases.contains { $0.name == "Crypto.com Arena" && $0.validFrom == "2021-12-25" })
        #expect(dataset.stadiums.first { $0.id == "stadium_mlb_oakland_coliseum" }?.deprecatedAt != nil)
        #expect(dataset.teams.first { $0.id == "team_mlb_athletics" }?.homeStadiumId == "stadium_mlb_sutter_health_park")
        let utah = dataset.teamAliases.filter { $0.teamId == "team_nhl_utah_mammoth" }.map(\.name)
        #expect(["Arizona Coyotes", "Utah Hockey Club", "Utah Mammoth"].allSatisfy(utah.contains))
        #expect(dataset.teams.filter { $0.homeStadiumId == "stadium_nfl_metlife_stadium" }.count == 2)
    }

    @Test func uuidsAreDeterministic() {
        #expect(CanonicalID.uuid(for: "stadium_mlb_oracle_park") == CanonicalID.uuid(for: "stadium_mlb_oracle_park"))
        #expect(CanonicalID.uuid(for: "stadium_mlb_oracle_park") != CanonicalID.uuid(for: "team_mlb_giants"))
        #expect(CanonicalID.uuid(for: "x_y").uuidString.dropFirst(14).first == "8")
    }
}
