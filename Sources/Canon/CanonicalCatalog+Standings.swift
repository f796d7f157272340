import CloudCore
import SportsDomain

/// Records and standings, counted when asked from the game index's regular-season finals (docs/CANONICAL.md,
/// "Records and standings"): a score a feed writes updates the index, so the next answer counts it, with nothing
/// stored or rebuilt.
extension CanonicalCatalog {
    /// The season of `league` a day belongs to: the one under way, else the last one over. A season starts in the day's
    /// year or the year before (NBA 2025-26 on 2026-03-01), so only those two are looked at: a day in a gap of the
    /// dataset gets no season rather than one from years before.
    public func season(of league: String, on day: CivilDate) -> Int? {
        let spans = [day.year, day.year - 1].compactMap { season in self.games.span(league: league, season: season).map { (season, $0) } }
        return spans.first { $0.1.contains(day) }?.0 ?? spans.first { $0.1.upperBound < day }?.0
    }

    /// The standings of a league-season before each of `days` (the finals of earlier days counted), from one pass
    /// over the season's games for the days not counted yet. The teams are those with a game in the season; each is
    /// grouped by its current division and conference, named as on that day. Empty when the index has no game of the
    /// season.
    public func standings(league: String, season: Int, before days: Set<CivilDate>) -> [CivilDate: Standings] {
        func key(_ day: CivilDate) -> String { league + "|" + String(season) + "|" + day.description }
        var standings: [CivilDate: Standings] = [:]
        for day in days { standings[day] = self.countedStandings[key(day)] }
        let missing = days.filter { standings[$0] == nil }
        for (day, counted) in self.countStandings(league: league, season: season, before: missing) {
            self.countedStandings[key(day)] = counted
            standings[day] = counted
        }
        return standings
    }

    private func countStandings(league: String, season: Int, before days: Set<CivilDate>) -> [CivilDate: Standings] {
        guard let span = self.games.span(league: league, season: season), let last = days.max() else { return [:] }
        let format = RecordFormat(sport: self.sports[league])
        let all = self.games.games(on: span, GameIndex.Filter(leagues: [league], season: season))
        let teams = Set(all.flatMap { [$0.homeTeam, $0.awayTeam] }).sorted()
        let counted = all.filter { $0.countsInRecords && $0.localDate < last }.sorted { $0.localDate < $1.localDate }
        let label = all.first?.seasonLabel ?? String(season)
        func reference(_ team: String, _ field: String) -> String? { self.directory.record(team)?.fields[field]?.value["recordName"]?.stringValue }
        var tally = SeasonTally(format: format, teams: teams)
        var next = 0
        var standings: [CivilDate: Standings] = [:]
        for day in days.sorted() {
            while next < counted.count, counted[next].localDate < day {
                tally.count(counted[next])
                next += 1
            }
            let time = Int64(day.daysSince1970) * 86_400_000
            let places = teams.map { team in
                TeamPlace(
                    team: NamedID(canonicalId: team, name: self.directory.name(of: team, on: time) ?? team),
                    abbreviation: self.directory.abbreviation(of: team, on: time), conference: reference(team, "conference"),
                    division: reference(team, "division"))
            }
            standings[day] = Standings(
                league: league, season: season, seasonLabel: label, date: day, format: format, places: places, records: tally.records)
        }
        return standings
    }

    /// The teams' cards of `games` by game id: each game's teams as its league-season stood before its local day.
    public func cards(of games: [Game]) -> [String: (home: TeamCard, away: TeamCard)] {
        var days: [String: (league: String, season: Int, days: Set<CivilDate>)] = [:]
        for game in games { days[game.league + "|" + String(game.season), default: (game.league, game.season, [])].days.insert(game.localDate) }
        var standings: [String: [CivilDate: Standings]] = [:]
        for (key, season) in days { standings[key] = self.standings(league: season.league, season: season.season, before: season.days) }
        var cards: [String: (home: TeamCard, away: TeamCard)] = [:]
        for game in games {
            guard let day = standings[game.league + "|" + String(game.season)]?[game.localDate], let home = day.card(of: game.homeTeam),
                let away = day.card(of: game.awayTeam)
            else { continue }
            cards[game.id] = (home, away)
        }
        return cards
    }
}
