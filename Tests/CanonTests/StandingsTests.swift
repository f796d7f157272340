import Canon
import CloudCore
import Foundation
import SportsDomain
import Testing

/// Records, standings and the teams' cards: the counting rules on games made here, and real seasons of the dataset
/// counted by the catalog against the same seasons counted here from the dataset's files.
@Suite struct StandingsTests {
    static func game(
        _ id: String, league: String = "league_nhl", type: String = "regular", status: String = "final", day: String = "2025-10-10",
        home: String = "team_home", away: String = "team_away", score: (Int, Int)? = (3, 2), detail: String? = nil, period: Int? = nil
    ) -> Game {
        var game = Game(
            id: id, league: league, season: 2025, seasonLabel: "2025-26", gameType: type, status: status, startTime: 0, timeTBD: false,
            neutralSite: false, localDate: CivilDate(day)!, homeTeam: home, awayTeam: away, stadium: "stadium_x", homeScore: score?.0,
            awayScore: score?.1)
        (game.statusDetail, game.period) = (detail, period)
        return game
    }

    @Test func eachLeagueCountsItsOwnColumnsAndOnlyRegularSeasonFinals() {
        var hockey = SeasonTally(format: RecordFormat(sport: "ice_hockey"), teams: ["team_home", "team_away"])
        for game in [
            Self.game("regulation"), Self.game("overtime", detail: "Final/OT"), Self.game("shootout", detail: "Final/SO"),
            Self.game("fed by period", period: 4), Self.game("double overtime", detail: "Final/2OT"),
            Self.game("playoff", type: "playoff"), Self.game("live", status: "live"), Self.game("unscored", score: nil),
        ] { hockey.count(game) }
        #expect(hockey.records["team_home"]?.text == "5-0-0")
        let away = hockey.records["team_away"]!
        #expect(away.text == "0-1-4" && away.points == 4 && away.gamesPlayed == 5)
        #expect(hockey.records["team_home"]?.points == 10)

        var soccer = SeasonTally(format: RecordFormat(sport: "soccer"), teams: [])
        for game in [Self.game("w", score: (2, 0)), Self.game("d", score: (1, 1)), Self.game("l", score: (0, 3))] { soccer.count(game) }
        #expect(soccer.records["team_home"]?.text == "1-1-1" && soccer.records["team_home"]?.points == 4)

        var football = SeasonTally(format: RecordFormat(sport: "american_football"), teams: [])
        for game in [
            Self.game("w", score: (20, 17)), Self.game("t", score: (20, 20)), Self.game("l", score: (3, 10)), Self.game("sb", type: "playoff"),
        ] {
            football.count(game)
        }
        #expect(football.records["team_home"]?.text == "1-1-1" && football.records["team_home"]?.winPercentage == 0.5)

        // The NBA Cup's final does not count; its group games are regular-season games.
        var basketball = SeasonTally(format: RecordFormat(sport: "basketball"), teams: [])
        for game in [Self.game("group"), Self.game("cup final", type: "cup"), Self.game("play-in", type: "playin")] { basketball.count(game) }
        #expect(basketball.records["team_home"]?.text == "1-0" && basketball.records["team_home"]?.points == nil)
    }

    @Test func levelTeamsShareARankAndHockeyRanksByPoints() {
        func place(_ team: String, division: String) -> TeamPlace {
            TeamPlace(team: NamedID(canonicalId: team, name: team), abbreviation: nil, conference: "conference_c", division: division)
        }
        let places = [
            place("team_a", division: "division_1"), place("team_b", division: "division_1"), place("team_c", division: "division_2"),
            place("team_d", division: "division_2"),
        ]
        let day = CivilDate("2025-11-01")!
        let pct = Standings(
            league: "league_nba", season: 2025, seasonLabel: "2025-26", date: day, format: .winsLosses, places: places,
            records: [
                "team_a": SeasonRecord(format: .winsLosses, wins: 8, losses: 2), "team_b": SeasonRecord(format: .winsLosses, wins: 4, losses: 1),
                "team_c": SeasonRecord(format: .winsLosses, wins: 8, losses: 2), "team_d": SeasonRecord(format: .winsLosses, wins: 1, losses: 9),
            ])
        // 8-2, 8-2 and 4-1 are all .800: one rank, listed by wins.
        #expect(pct.teams.map(\.rank) == [1, 1, 1, 4])
        #expect(pct.teams.map(\.team.canonicalId) == ["team_a", "team_c", "team_b", "team_d"])
        #expect(
            pct.card(of: "team_d")
                == TeamCard(abbreviation: nil, logo: "logo_team_d", record: "1-9", standing: .init(division: 2, conference: 4, league: 4)))
        #expect(Standings(json: pct.json) == pct)

        let hockey = Standings(
            league: "league_nhl", season: 2025, seasonLabel: "2025-26", date: day, format: .winsLossesOvertimeLosses, places: places,
            records: [
                "team_a": SeasonRecord(format: .winsLossesOvertimeLosses, wins: 5, losses: 0, overtimeLosses: 0),
                "team_b": SeasonRecord(format: .winsLossesOvertimeLosses, wins: 5, losses: 4, overtimeLosses: 3),
            ])
        // 13 points from 12 games beat 10 from 5; teams that have not played are level at 0 points.
        #expect(hockey.teams.map(\.team.canonicalId) == ["team_b", "team_a", "team_c", "team_d"])
        #expect(hockey.teams.map(\.rank) == [1, 2, 3, 3])
        #expect(Standings(json: hockey.json) == hockey)
    }

    /// The dataset's games of some seasons, as the public database's records: a catalog like the server's.
    static let seasons = Result { () throws -> (CanonicalDataset, CanonicalCatalog) in
        let dataset = try CanonicalDataset.load(
            from: DatasetTests.root.appendingPathComponent("Resources/canonical").path,
            gameSeasons: ["mlb_2025", "nhl_2024", "nwsl_2024", "nfl_2022"])
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "_", deviceID: "_")
        let drafts = try dataset.records() + dataset.gameRecords().values.flatMap { $0 }
        let records = drafts.map {
            Record(recordName: $0.recordName, recordType: $0.recordType, changeSeq: 1, fields: $0.fields, created: stamp, modified: stamp)
        }
        return (dataset, CanonicalCatalog(records: records))
    }

    /// A team's regular-season record before `day`, counted here from the dataset's file: wins, losses, level games.
    static func counted(_ dataset: CanonicalDataset, _ season: String, _ team: String, before day: String) -> (Int, Int, Int) {
        var record = (0, 0, 0)
        for game in dataset.games[season] ?? [] where game.gameType == "regular" && game.status == "final" && game.localDate < day {
            guard let home = game.homeScore, let away = game.awayScore, game.homeTeamId == team || game.awayTeamId == team else { continue }
            let (own, other) = game.homeTeamId == team ? (home, away) : (away, home)
            if own > other { record.0 += 1 } else if own < other { record.1 += 1 } else { record.2 += 1 }
        }
        return record
    }

    @Test func aRealTeamsCardCountsItsFinalsBeforeTheGamesDay() throws {
        let (dataset, catalog) = try Self.seasons.get()
        let game = try #require(
            catalog.games.games(on: CivilDate("2025-06-15")!...CivilDate("2025-06-15")!, GameIndex.Filter(team: "team_mlb_cubs")).first)
        let (wins, losses, _) = Self.counted(dataset, "mlb_2025", "team_mlb_cubs", before: "2025-06-15")
        let cards = try #require(catalog.cards(of: [game])[game.id])
        let cubs = game.homeTeam == "team_mlb_cubs" ? cards.home : cards.away
        #expect(cubs.record == "\(wins)-\(losses)" && wins + losses > 60)
        #expect(cubs.abbreviation == "CHC" && cubs.logo == "logo_team_mlb_cubs")
        #expect(cubs.standing?.division != nil && cubs.standing?.conference != nil)
    }

    /// 2025's final table: the Brewers 97-65 first in MLB, the Rockies 43-119 last; the NL Central as its teams' own
    /// records order it.
    @Test func finalStandingsOfARealSeason() throws {
        let (dataset, catalog) = try Self.seasons.get()
        let after = try #require(catalog.games.span(league: "league_mlb", season: 2025)).upperBound.adding(days: 1)
        #expect(catalog.season(of: "league_mlb", on: CivilDate("2026-01-15")!) == 2025)
        let mlb = try #require(catalog.standings(league: "league_mlb", season: 2025, before: [after])[after])
        #expect(mlb.teams.count == 30 && mlb.format == .winsLosses)
        #expect(mlb.teams.first?.team.canonicalId == "team_mlb_brewers" && mlb.teams.first?.record.text == "97-65")
        #expect(mlb.teams.last?.team.canonicalId == "team_mlb_rockies" && mlb.teams.last?.record.text == "43-119")
        let central = try #require(mlb.conferences.flatMap(\.divisions).first { $0.canonicalId == "division_mlb_nl_central" })
        let expected = central.teams.map { entry in Self.counted(dataset, "mlb_2025", entry.team.canonicalId, before: after.description) }
        #expect(central.teams.map { "\($0.record.wins)-\($0.record.losses)" } == expected.map { "\($0.0)-\($0.1)" })
        #expect(central.teams.first?.team.canonicalId == "team_mlb_brewers" && central.teams.first?.rank == 1)
        #expect(mlb.conferences.count == 2 && mlb.conferences.allSatisfy { $0.divisions.count == 3 && $0.teams.count == 15 })
    }

    /// NWSL 2024 (W-D-L, one table): Orlando 18-6-2 (60 points) above Washington 18-2-6 (56). NFL 2022 (W-L-T): the
    /// Colts' tie. NHL 2024-25: the dataset's finals carry no overtime detail, so every loss is a regulation loss.
    @Test func soccerFootballAndHockeyTablesOfRealSeasons() throws {
        let (_, catalog) = try Self.seasons.get()
        func final(_ league: String, _ season: Int) throws -> Standings {
            let after = try #require(catalog.games.span(league: league, season: season)).upperBound.adding(days: 1)
            return try #require(catalog.standings(league: league, season: season, before: [after])[after])
        }
        let nwsl = try final("league_nwsl", 2024)
        #expect(nwsl.conferences.isEmpty && nwsl.format == .winsDrawsLosses)
        #expect(nwsl.teams.prefix(2).map(\.team.canonicalId) == ["team_nwsl_orlando_pride", "team_nwsl_washington_spirit"])
        #expect(nwsl.teams.prefix(2).map(\.record.text) == ["18-6-2", "18-2-6"] && nwsl.teams.first?.record.points == 60)

        let colts = try #require(try final("league_nfl", 2022).teams.first { $0.team.canonicalId == "team_nfl_colts" })
        #expect(colts.record.text == "4-12-1")

        let jets = try #require(try final("league_nhl", 2024).teams.first { $0.team.canonicalId == "team_nhl_jets" })
        #expect(jets.record.text == "56-26-0" && jets.record.points == 112)
    }

    @Test func aTeamsAbbreviationIsTheOneOfTheDate() throws {
        let (_, catalog) = try Self.seasons.get()
        #expect(catalog.directory.abbreviation(of: "team_mlb_athletics", on: GameTime.milliseconds("2019-06-01T00:00:00Z")) == "OAK")
        #expect(catalog.directory.abbreviation(of: "team_mlb_athletics", on: GameTime.milliseconds("2025-06-01T00:00:00Z")) == "ATH")
        #expect(catalog.directory.abbreviation(of: "team_mlb_athletics") == "ATH")
    }
}

/// The `canonical/games` answer carries the cards and broadcasts both ways: what the server writes, the SDK reads.
@Suite struct GamesAnswerTests {
    @Test func cardsAndBroadcastsRoundTripAndAnOlderAnswerReadsWithoutThem() throws {
        var game = StandingsTests.game("game_nhl_2025_1", detail: "Final/OT", period: 4)
        game.broadcasts = ["ESPN+", "SN"]
        let home = TeamCard(
            abbreviation: "HOM", logo: TeamCard.logo(of: "team_home"), record: "8-2-1", standing: .init(division: 1, conference: 3, league: 5))
        let away = TeamCard(
            abbreviation: nil, logo: TeamCard.logo(of: "team_away"), record: "0-0-0", standing: .init(division: nil, conference: nil, league: 9))
        let named = NamedGame(game: game, cards: (home, away)) { $0.uppercased() }
        let json = named.json
        #expect(json["homeTeam"]?["canonicalId"] == "team_home" && json["homeTeam"]?["name"] == "TEAM_HOME")
        #expect(json["homeTeam"]?["standing"] == ["division": 1, "conference": 3, "league": 5] && json["homeTeam"]?["logo"] == "logo_team_home")
        #expect(json["broadcasts"] == ["ESPN+", "SN"])
        #expect(NamedGame(json: json) == named)

        var older = json.objectValue!
        for side in ["homeTeam", "awayTeam"] { older[side] = ["canonicalId": older[side]!["canonicalId"]!, "name": older[side]!["name"]!] }
        older["broadcasts"] = nil
        let read = try #require(NamedGame(json: .object(older)))
        #expect(read.homeCard == nil && read.awayCard == nil && read.game.broadcasts == nil && read.homeTeam == named.homeTeam)
    }
}
