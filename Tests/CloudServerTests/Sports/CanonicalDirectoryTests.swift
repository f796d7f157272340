import Canon
import CloudCore
import Foundation
import Testing

@Suite(.bounded) struct CanonicalDirectoryTests {
    /// A server whose public database holds the real canonical dataset.
    static func withImportedServer(_ body: @Sendable @escaping (TestServer) async throws -> Void) async throws {
        try await TestServer.runImported(try CanonicalFixtures.dataset.get(), body)
    }

    static func resolve(_ server: TestServer, _ body: JSONValue) async throws -> [JSONValue] {
        let reply = try await server.call("canonical/resolve", body, database: "public")
        #expect(reply.status == 200, "\(reply.json)")
        return reply.json["results"]?.arrayValue ?? []
    }

    @Test func historicalNamesResolveCaseAndAccentInsensitively() async throws {
        try await Self.withImportedServer { server in
            let sbc = try await Self.resolve(server, ["name": "  sbc   PARK "])
            #expect(sbc.map { $0["canonicalId"] } == ["stadium_mlb_oracle_park"])
            #expect(sbc.first?["currentName"] == "Oracle Park")
            #expect(sbc.first?["allNames"]?.arrayValue?.compactMap(\.stringValue).suffix(3) == ["SBC Park", "AT&T Park", "Oracle Park"])
            #expect(sbc.first?["uuid"]?.stringValue == CanonicalID.uuid(for: "stadium_mlb_oracle_park").uuidString)

            let staples = try await Self.resolve(server, ["name": "Staples Center", "date": "2021-12-24"])
            #expect(staples.first?["currentName"] == "Crypto.com Arena")
            #expect(try await Self.resolve(server, ["name": "Staples Center", "date": "2022-06-01"]).isEmpty)
            #expect(try await Self.resolve(server, ["name": "Crypto.com Arena", "date": "2021-12-25"]).count == 1)

            let coyotes = try await Self.resolve(server, ["name": "arizona coyotes"])
            #expect(coyotes.first?["canonicalId"] == "team_nhl_utah_mammoth")
            #expect(coyotes.first?["currentName"] == "Utah Mammoth")
            // A team's city and abbreviation of the time find it too, dated like its names (seed identity gap).
            let oak2019 = try await Self.resolve(server, ["name": "OAK", "date": "2019-06-01"])
            #expect(oak2019.compactMap { $0["canonicalId"]?.stringValue } == ["team_mlb_athletics", "team_nfl_raiders"])
            #expect(oak2019.first?["matchedName"] == "OAK" && oak2019.first?["currentName"] == "Athletics")
            #expect(try await Self.resolve(server, ["name": "oak", "date": "2025-06-01"]).isEmpty, "the A's are ATH now")
            #expect(try await Self.resolve(server, ["name": "ATH"]).compactMap { $0["canonicalId"]?.stringValue } == ["team_mlb_athletics"])
            let oakland = try await Self.resolve(server, ["name": "Oakland", "date": "2010-06-01"])
            #expect(oakland.compactMap { $0["canonicalId"]?.stringValue } == ["team_mlb_athletics", "team_nfl_raiders"])
            let accented = try await Self.resolve(server, ["name": "Montréal Canadiens"])
            #expect(accented == (try await Self.resolve(server, ["name": "MONTREAL CANADIENS"])))
            #expect(try await server.call("canonical/resolve", [:], database: "public").errorCode == "BAD_REQUEST")
        }
    }

    @Test func nearbyRanksByDistanceHonoursDatesAndAgreesWithNearQueries() async throws {
        try await Self.withImportedServer { server in
            let nearOracle: JSONValue = ["latitude": 37.7786, "longitude": -122.3893]
            let venues = try await server.call("canonical/nearby", nearOracle, database: "public").json["venues"]?.arrayValue ?? []
            #expect(venues.first?["canonicalId"] == "stadium_mlb_oracle_park")
            #expect(venues.first?["confidence"] == "high")

            // A 2010 photo at Oakland Coliseum matches the (now deprecated) venue; today it does not.
            let coliseum: [String: JSONValue] = ["latitude": 37.7516, "longitude": -122.2005, "sport": "baseball"]
            var dated = coliseum
            dated["date"] = "2010-06-01"
            let then = try await server.call("canonical/nearby", .object(dated), database: "public").json["venues"]?.arrayValue ?? []
            #expect(then.first?["canonicalId"] == "stadium_mlb_oakland_coliseum")
            let now = try await server.call("canonical/nearby", .object(coliseum), database: "public").json["venues"]?.arrayValue ?? []
            #expect(!now.contains { $0["canonicalId"] == "stadium_mlb_oakland_coliseum" })

            // Same centre and radius through records/query NEAR: the same venues (today's, all sports).
            let radius = 20_000.0
            let all = try await server.call(
                "canonical/nearby", ["latitude": 37.7786, "longitude": -122.3893, "radius": .double(radius)], database: "public")
            let query = try await server.call(
                "records/query",
                [
                    "query": [
                        "recordType": "Stadium",
                        "filterBy": [
                            ["comparator": "NEAR", "fieldName": "location", "fieldValue": ["value": nearOracle], "distance": .double(radius)]
                        ],
                    ]
                ], database: "public")
            let queried = Set(query.records.filter { $0["fields"]?["deprecatedAt"] == nil }.compactMap { $0["recordName"]?.stringValue })
            #expect(Set(all.json["venues"]?.arrayValue?.compactMap { $0["canonicalId"]?.stringValue } ?? []) == queried)
            #expect(queried.count >= 2)
        }
    }
}
