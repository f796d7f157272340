import Canon
import CloudCore
import Foundation
import Testing

/// The import plan on the seed scenarios, without a database: each starts from the records a first import stored.
@Suite struct ImportPlanScenarioTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let schema = Result {
        try Schema.parse(Array(FileManager.default.contents(atPath: root.appendingPathComponent("Resources/schema.json").path)!))
    }
    static let dataset = Result { try CanonicalDataset.load(from: root.appendingPathComponent("Resources/canonical").path, gameSeasons: []) }
    static let stamp = ChangeStamp(timestamp: 0, userRecordName: "_canonicalImport", deviceID: "test")

    /// What a first import of `dataset` stored.
    static func stored(_ dataset: CanonicalDataset) throws -> [String: Record] {
        let plan = try CanonicalImportPlan(source: try dataset.records(), stored: [:], schema: try schema.get(), now: 1)
        return Dictionary(
            uniqueKeysWithValues: plan.drafts.enumerated().map { index, draft in
                (
                    draft.recordName,
                    Record(
                        recordName: draft.recordName, recordType: draft.recordType, changeSeq: Int64(index + 1), fields: draft.fields, created: stamp,
                        modified: stamp)
                )
            })
    }

    static func plan(from before: CanonicalDataset, to after: CanonicalDataset) throws -> CanonicalImportPlan {
        try CanonicalImportPlan(source: try after.records(), stored: try stored(before), schema: try schema.get(), now: 2)
    }

    @Test func aNewVenueIsCreated() throws {
        let after = try Self.dataset.get()
        var before = after
        before.stadiums.removeAll { $0.id == "stadium_mlb_sutter_health_park" }
        before.stadiumAliases.removeAll { $0.stadiumId == "stadium_mlb_sutter_health_park" }
        before.teamVenues.removeAll { $0.stadiumId == "stadium_mlb_sutter_health_park" }
        before.teams = before.teams.map { team in
            var team = team
            if team.homeStadiumId == "stadium_mlb_sutter_health_park" { team.homeStadiumId = "stadium_mlb_oakland_coliseum" }
            return team
        }
        let plan = try Self.plan(from: before, to: after)
        #expect(plan.changes.contains(.created("stadium_mlb_sutter_health_park", type: "Stadium")))
        #expect(plan.changes.contains(.updated("team_mlb_athletics", type: "Team", fields: ["homeStadium"])))
    }

    @Test func aRelocationMovesTheTeamAndKeepsItsId() throws {
        let before = try Self.dataset.get()
        var after = before
        let index = after.teams.firstIndex { $0.id == "team_mlb_athletics" }!
        after.teams[index].city = "Las Vegas"
        after.teams[index].homeStadiumId = "stadium_mlb_oracle_park"
        let plan = try Self.plan(from: before, to: after)
        #expect(plan.changes == [.updated("team_mlb_athletics", type: "Team", fields: ["city", "homeStadium"])])
        let team = try #require(plan.drafts.first)
        #expect(team.fields["canonicalId"]?.value == "team_mlb_athletics")
        #expect(team.fields["homeStadium"]?.value["recordName"] == "stadium_mlb_oracle_park")
    }

    @Test func aDemolitionDeprecatesTheVenueAndNothingIsDeleted() throws {
        let before = try Self.dataset.get()
        var after = before
        let index = after.stadiums.firstIndex { $0.id == "stadium_mlb_oracle_park" }!
        after.stadiums[index].deprecatedAt = "2030-01-01"
        let plan = try Self.plan(from: before, to: after)
        #expect(plan.changes == [.updated("stadium_mlb_oracle_park", type: "Stadium", fields: ["deprecatedAt"])])
        #expect(plan.drafts.allSatisfy { !$0.fields.isEmpty })
    }

    @Test func aSharedVenueStaysWhenOneTenantLeaves() throws {
        let before = try Self.dataset.get()
        #expect(before.teams.filter { $0.homeStadiumId == "stadium_nfl_metlife_stadium" }.map(\.id).sorted() == ["team_nfl_giants", "team_nfl_jets"])
        var after = before
        let index = after.teams.firstIndex { $0.id == "team_nfl_jets" }!
        after.teams[index].homeStadiumId = "stadium_mlb_oracle_park"
        let plan = try Self.plan(from: before, to: after)
        #expect(plan.changes == [.updated("team_nfl_jets", type: "Team", fields: ["homeStadium"])])
    }

    @Test func theSameSourceTwiceChangesNothing() throws {
        let dataset = try Self.dataset.get()
        #expect(try Self.plan(from: dataset, to: dataset).changes.isEmpty)
    }
}
