import Canon
import CloudCore
import SportsDomain

/// Finds the canonical game a provider reports (docs/FEEDS.md, "Matching"). Providers disagree on ids and team
/// names, so a game is found by the id a feed already knows it by, else by its derived key: league, home team, the
/// local day at the game's venue, and the away team; a doubleheader's games by game number, else by start time.
struct GameMatcher {
    let catalog: CanonicalCatalog

    enum Outcome: Equatable {
        /// The canonical game; `knownByID` when the provider's id found it (it may have moved days).
        case game(Game, knownByID: Bool)
        /// No canonical game has this key: the teams as resolved.
        case none(home: String, away: String)
        /// The provider's game cannot be read against the canonical data (an unknown team).
        case unreadable(String)
    }

    /// - Parameter taken: games other reports of the same answer matched (both halves of a doubleheader may come
    ///   without a game number).
    func match(_ reported: ProviderGame, taken: Set<String> = []) -> Outcome {
        if let known = self.catalog.games.game(league: reported.league, provider: reported.provider, id: reported.id) {
            return .game(known, knownByID: true)
        }
        guard let home = self.team(reported.home, league: reported.league, at: reported.startTime) else {
            return .unreadable("no \(reported.league) team is called \(reported.home.names.joined(separator: " / "))")
        }
        guard let away = self.team(reported.away, league: reported.league, at: reported.startTime) else {
            return .unreadable("no \(reported.league) team is called \(reported.away.names.joined(separator: " / "))")
        }
        let utcDay = CivilDate(daysSince1970: Int(reported.startTime / 86_400_000))
        let sameDay = self.catalog.games.games(
            on: utcDay.adding(days: -1)...utcDay.adding(days: 1), GameIndex.Filter(leagues: [reported.league], team: home)
        )
        .filter { game in
            game.homeTeam == home && game.awayTeam == away && self.catalog.localDate(of: reported.startTime, at: game.stadium) == game.localDate
                // A game another id of this provider already claimed is the other half of a doubleheader.
                && !self.catalog.games.isClaimed(game.id, by: reported.provider, otherThan: reported.id) && !taken.contains(game.id)
        }
        guard !sameDay.isEmpty else { return .none(home: home, away: away) }
        if sameDay.count > 1, let number = reported.gameNumber, sameDay.indices.contains(number - 1) {
            return .game(sameDay[number - 1], knownByID: false)
        }
        let nearest = sameDay.min { abs($0.startTime - reported.startTime) < abs($1.startTime - reported.startTime) }!
        return .game(nearest, knownByID: false)
    }

    /// The canonical team of `league` one of the provider's names for it resolves to (the most specific name that
    /// names exactly one team of the league, with the names of that date), else the one team whose current nickname
    /// or code it is.
    func team(_ side: ProviderGame.Side, league: String, at time: Int64) -> String? {
        for name in side.names {
            let teams = self.catalog.directory.resolve(name, on: time).filter { resolution in
                resolution.recordType == "Team"
                    && self.catalog.directory.record(resolution.canonicalId)?.fields["league"]?.value["recordName"]?.stringValue == league
            }
            let ids = Set(teams.map(\.canonicalId))
            if ids.count == 1 { return ids.first }
        }
        // A nickname or code alone ("Bruins", "BOS"), as the NHL's scores give them, against the teams' current ones.
        return side.names.lazy.compactMap { self.catalog.team(shortName: $0, league: league) }.first
    }

    /// Where a provider says a game is played.
    enum ReportedVenue: Equatable {
        /// One of the directory's venues, by the provider's name for it.
        case named(GameUpdate.Venue)
        /// The provider named none: the home team's home.
        case home(GameUpdate.Venue)
        /// The provider named a venue the directory lacks (or that names several): an operator's to add, not a guess.
        case unknown(String)
    }

    /// The venue a provider reports a game at, with `home`'s home to tell a neutral site.
    func venue(of reported: ProviderGame, home: String) -> ReportedVenue? {
        let homeVenue = self.catalog.directory.record(home)?.fields["homeStadium"]?.value["recordName"]?.stringValue
        guard let name = reported.venue, !name.isEmpty else { return homeVenue.map { .home(GameUpdate.Venue(id: $0, neutral: false)) } }
        let venues = Set(self.catalog.directory.resolve(name, on: reported.startTime).filter { $0.recordType == "Stadium" }.map(\.canonicalId))
        guard venues.count == 1, let venue = venues.first else { return .unknown(name) }
        return .named(GameUpdate.Venue(id: venue, neutral: venue != homeVenue))
    }
}
