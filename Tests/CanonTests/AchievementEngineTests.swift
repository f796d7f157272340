import Canon
import CloudCore
import Foundation
import SportsDomain
import Testing

/// The achievement rules on the real canonical dataset: earned when the scope is complete, kept when a venue is
/// later deprecated, revoked when a visit is deleted, counted once across renames, and for the right sport.
@Suite struct AchievementEngineTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let records = Result { () throws -> [Record] in
        let dataset = try CanonicalDataset.load(from: root.appendingPathComponent("Resources/canonical").path, gameSeasons: [])
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_operator", deviceID: "test")
        return try dataset.records().map {
            Record(recordName: $0.recordName, recordType: $0.recordType, changeSeq: 1, fields: $0.fields, created: stamp, modified: stamp)
        }
    }

    static func day(_ text: String) throws -> Int64 { try CanonicalDate.milliseconds(text) }

    static func visit(_ name: String, _ stadium: String, _ date: String, sport: String? = nil) throws -> AchievementEngine.Visit {
        AchievementEngine.Visit(recordName: name, stadium: "stadium_" + stadium, date: try day(date), sport: sport)
    }

    static let alEast2023 = [
        ("v1", "mlb_yankee_stadium", "2023-05-01"), ("v2", "mlb_fenway_park", "2023-06-01"), ("v3", "mlb_oriole_park_at_camden_yards", "2023-07-01"),
        ("v4", "mlb_rogers_centre", "2023-08-01"), ("v5", "mlb_tropicana_field", "2023-09-01"),
    ]

    @Test func aScopeIsEarnedTheDayItsLastVenueIsVisitedAndAMoveLaterNeverRevokesIt() throws {
        let engine = AchievementEngine(records: try Self.records.get())
        let visits = try Self.alEast2023.map { try Self.visit($0.0, $0.1, $0.2) }
        let earned = engine.evaluate(visits)
        let alEast = try #require(earned.first { $0.achievement == "achievement_mlb_al_east_all_venues" })
        #expect(alEast.earnedAt == (try Self.day("2023-09-01")))
        #expect(alEast.visits == ["v1", "v2", "v3", "v4", "v5"])
        #expect(earned.contains { $0.achievement == "achievement_mlb_5_venues" })
        #expect(earned.contains { $0.achievement == "achievement_first_visit" && $0.visits == ["v1"] })
        #expect(!earned.contains { $0.achievement == "achievement_mlb_all_venues" })
        // The Rays played 2025 at Steinbrenner Field: five visits in 2025 without it do not complete the division.
        let in2025 = try Self.alEast2023.map { try Self.visit($0.0, $0.1, $0.2.replacingOccurrences(of: "2023", with: "2025")) }
        #expect(!engine.evaluate(in2025).contains { $0.achievement == "achievement_mlb_al_east_all_venues" })
        // The Oakland Coliseum and the Rangers' old park (Choctaw Stadium), both left since, still complete the 2019 AL West;
        // Globe Life Field, opened in 2020, does not stand in for the Rangers' 2019 home.
        func alWest2019(rangers: String) throws -> [AchievementEngine.Visit] {
            try [
                ("w1", "mlb_angel_stadium"), ("w2", "mlb_oakland_coliseum"), ("w3", "mlb_t_mobile_park"), ("w4", rangers), ("w5", "mlb_daikin_park"),
            ]
            .enumerated().map { index, entry in try Self.visit(entry.0, entry.1, "2019-0\(index + 4)-10") }
        }
        let west = engine.evaluate(try alWest2019(rangers: "mlb_choctaw_stadium")).first { $0.achievement == "achievement_mlb_al_west_all_venues" }
        #expect(west?.earnedAt == (try Self.day("2019-08-10")))
        #expect(!engine.evaluate(try alWest2019(rangers: "mlb_globe_life_field")).contains { $0.achievement == "achievement_mlb_al_west_all_venues" })
    }

    @Test func deletingAVisitRevokesAndARenamedVenueCountsOnce() throws {
        let engine = AchievementEngine(records: try Self.records.get())
        var visits = try Self.alEast2023.map { try Self.visit($0.0, $0.1, $0.2) }
        let earned = engine.evaluate(visits)
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_me", deviceID: "phone")
        var existing: [String: Record] = [:]
        for edit in engine.edits(earned: earned, existing: [:], now: 9) {
            existing[edit.recordName] = Record(
                recordName: edit.recordName, recordType: "Achievement", changeSeq: 1, fields: edit.fields.compactMapValues { $0 }, created: stamp,
                modified: stamp)
        }
        #expect(existing["achievement_mlb_al_east_all_venues"]?.fields["achievementId"]?.value == "achievement_mlb_al_east_all_venues")
        #expect(engine.edits(earned: earned, existing: existing, now: 9).isEmpty, "nothing changed, nothing to write")

        visits.removeAll { $0.recordName == "v4" }
        let edits = engine.edits(earned: engine.evaluate(visits), existing: existing, now: 42)
        #expect(edits.map(\.recordName).sorted() == ["achievement_mlb_5_venues", "achievement_mlb_al_east_all_venues"])
        #expect(edits.allSatisfy { $0.fields["revokedAt"] == FieldValue(type: .timestamp, value: .int(42)) })

        // Pacific Bell Park in 2000 and Oracle Park in 2020 are one venue.
        let giants = try [Self.visit("g1", "mlb_oracle_park", "2000-05-01"), Self.visit("g2", "mlb_oracle_park", "2020-08-01")]
        let first = engine.evaluate(giants)
        #expect(first.map(\.achievement) == ["achievement_first_visit"])
        #expect(first[0].visits == ["g1"])
    }

    @Test func aVisitCountsForTheSportItWasFor() throws {
        var records = try Self.records.get()
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_operator", deviceID: "test")
        for league in ["nba", "nhl"] {
            records.append(
                Record(
                    recordName: "achievement_\(league)_1_venue", recordType: "AchievementDefinition", changeSeq: 1,
                    fields: [
                        "requirement": FieldValue(type: .string, value: "venueCount"), "count": FieldValue(type: .int64, value: 1),
                        "league": FieldValue(type: .reference, value: Reference(recordName: "league_\(league)").json),
                    ], created: stamp, modified: stamp))
        }
        let engine = AchievementEngine(records: records)
        func badges(_ sport: String?) throws -> Set<String> {
            Set(engine.evaluate([try Self.visit("m", "nba_madison_square_garden", "2024-01-10", sport: sport)]).map(\.achievement))
                .intersection(["achievement_nba_1_venue", "achievement_nhl_1_venue"])
        }
        #expect(try badges("ice_hockey") == ["achievement_nhl_1_venue"])
        #expect(try badges("basketball") == ["achievement_nba_1_venue"])
        #expect(try badges(nil) == ["achievement_nba_1_venue", "achievement_nhl_1_venue"], "a visit without a sport counts for both tenants")
    }
}
