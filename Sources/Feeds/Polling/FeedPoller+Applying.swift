import Canon
import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Logging
import SportsDomain
import Synchronization

/// Applying a provider's answer to the target databases (docs/FEEDS.md, "Matching a reported game" to "What a feed may
/// change"): matching, trust by league, games added, retired and held, and the writes into the season zones.
extension FeedPoller {
    struct Unconfirmed {
        var startTime: Int64
        var teams: (home: String, away: String)?
        /// The answer that first reported it, and when (ms): reports older than two days are forgotten.
        var answer: Int
        var seenAt: Int64
    }

    /// Applies `games` to every target database; returns those that matched no canonical game in the first.
    func applyToTargets(
        _ games: [ProviderGame], from provider: any ScoreProvider, days: ClosedRange<CivilDate>, answer: Int,
        confirming: (provider: String, games: [ProviderGame])?, report: inout Report
    ) async -> [ProviderGame] {
        var unmatched: [ProviderGame]?
        for target in self.configuration.targets {
            do {
                let applied = try await self.apply(
                    games, from: provider, days: days, answer: answer, confirming: confirming, container: target.container,
                    environment: target.environment)
                (report.changed, report.created) = (report.changed + applied.changed, report.created + applied.created)
                report.refused += applied.refused
                if unmatched == nil {
                    unmatched = applied.unmatched
                    await self.hold(applied.held, releasing: applied.added)
                }
            } catch {
                report.refused.append("\(target.environment): not written: \(error)")
                self.logger.error("a feed's games could not be written", metadata: ["provider": "\(provider.name)", "error": "\(error)"])
            }
        }
        return unmatched ?? []
    }

    /// What applying one answer to one public database did.
    struct Applied {
        var changed = 0, created = 0
        var refused: [String] = []
        /// Games that matched no canonical game and were not added.
        var unmatched: [ProviderGame] = []
        /// New games at a venue the directory lacks, described for an operator, by `heldKey`; and the keys of new games
        /// added (no longer held).
        var held: [String: String] = [:]
        var added = Set<String>()
    }

    /// - Parameters:
    ///   - days: the days asked: the games the answer should list (`retiring`).
    ///   - answer: the answer's number: in a league with no official source, a game moved by days or one the dataset
    ///     lacks is applied when an earlier answer of the provider reported it too (`unconfirmed`).
    ///   - confirming: another provider's games: a game of `games` that matches no canonical game is added when one of
    ///     them names the same teams within 12 hours (two sources agree), as an official source's is.
    func apply(
        _ games: [ProviderGame], from provider: any ScoreProvider, days: ClosedRange<CivilDate>, answer: Int,
        confirming: (provider: String, games: [ProviderGame])? = nil, container: String, environment: String
    ) async throws -> Applied {
        let database = try await self.records.database(
            container: container, environment: environment, scope: .public, owner: nil, logger: self.logger)
        let catalog = try await self.canonical.catalog(for: database, logger: self.logger)
        let matcher = GameMatcher(catalog: catalog)
        let now = self.clock.now
        var applied = Applied()
        var updates: [String: [String: (ProviderGame, CivilDate, GameUpdate.Venue?)]] = [:]
        var creates: [String: [RecordDraft]] = [:]
        var taken = Set<String>()
        /// Games whose move by days their provider's earlier answer confirmed.
        var confirmedMoves = Set<String>()
        /// True when the report is the provider's second word on it, in a league where that must stand in for an official
        /// source; otherwise notes it for the next answer.
        func repeated(_ reported: ProviderGame, teams: (home: String, away: String)?) -> Bool {
            guard provider.trust != .official, !self.configuration.hasOfficialSource(reported.league) else { return false }
            let key = reported.league + "|" + provider.name + "|" + reported.id
            return self.unconfirmed.withLock { unconfirmed in
                if let earlier = unconfirmed[key], earlier.answer < answer,
                    abs(earlier.startTime - reported.startTime) <= (teams == nil ? 0 : 12 * 3_600_000),
                    earlier.teams?.home == teams?.home, earlier.teams?.away == teams?.away
                {
                    return true
                }
                if unconfirmed[key]?.answer != answer {
                    unconfirmed = unconfirmed.filter { $0.value.seenAt > now - 2 * 86_400_000 }
                    unconfirmed[key] = Unconfirmed(startTime: reported.startTime, teams: teams, answer: answer, seenAt: now)
                }
                return false
            }
        }
        for reported in games {
            let abbreviation = String(reported.league.dropFirst("league_".count))
            switch matcher.match(reported, taken: taken) {
            case .unreadable(let why):
                applied.refused.append("\(provider.name) \(reported.id): \(why)")
            case .game(let game, _):
                taken.insert(game.id)
                // An official source that names another of the directory's venues moves the game there.
                var venue: GameUpdate.Venue?
                if provider.trust == .official, case .named(let named)? = matcher.venue(of: reported, home: game.homeTeam), named.id != game.stadium {
                    venue = named
                }
                let day = catalog.localDate(of: reported.startTime, at: venue?.id ?? game.stadium) ?? game.localDate
                if day != game.localDate, repeated(reported, teams: nil) { confirmedMoves.insert(game.id) }
                updates[CanonicalDataset.gameZone("\(abbreviation)_\(game.season)"), default: [:]][game.id] = (reported, day, venue)
            case .none(let home, let away):
                let confirmed = confirming?.games.contains { other in
                    abs(other.startTime - reported.startTime) <= 12 * 3_600_000
                        && matcher.team(other.home, league: reported.league, at: other.startTime) == home
                        && matcher.team(other.away, league: reported.league, at: other.startTime) == away
                }
                guard provider.trust == .official || confirmed == true || repeated(reported, teams: (home, away)) else {
                    applied.unmatched.append(reported)
                    applied.refused.append(
                        "\(provider.name) \(reported.id): matches no canonical game; only an official source, two sources agreeing, or (in a "
                            + "league with no official source) the provider's next answer add games")
                    continue
                }
                if let confirming {
                    self.logger.notice(
                        "two providers agree on a game the dataset lacks",
                        metadata: ["providers": "\(provider.name), \(confirming.provider)", "game": "\(reported.id)"])
                }
                let venue: GameUpdate.Venue
                switch matcher.venue(of: reported, home: home) {
                case .named(let named)?, .home(let named)?: venue = named
                case .unknown(let name)?:
                    // Not guessed: an operator adds the venue (or the name as an alias), and the next answer adds the game.
                    applied.held[Self.heldKey(reported)] =
                        "\(reported.league) \(reported.provider) \(reported.id): \(reported.away.names.first ?? "?") at \(reported.home.names.first ?? "?"), "
                        + "on \(Self.usDay(of: reported.startTime)), at \"\(name)\", a venue the directory lacks"
                    applied.refused.append("\(provider.name) \(reported.id): at \"\(name)\", a venue the directory lacks: held for an operator")
                    continue
                case nil:
                    applied.refused.append("\(provider.name) \(reported.id): a new game without a venue")
                    continue
                }
                applied.added.insert(Self.heldKey(reported))
                guard let day = catalog.localDate(of: reported.startTime, at: venue.id),
                    let new = GameUpdate.newGame(
                        reported, league: (reported.league, abbreviation), home: home, away: away, venue: venue, localDate: day,
                        sport: catalog.sports[reported.league], now: now)
                else {
                    applied.refused.append("\(provider.name) \(reported.id): a new game without a season")
                    continue
                }
                creates[new.zone, default: []].append(new.draft)
            }
        }
        let retired = self.retiring(catalog.games, listed: taken, in: games, from: provider, days: days, answer: answer, applied: &applied)
        let zones = Set(updates.keys).union(creates.keys).union(retired.keys).sorted()
        guard !zones.isEmpty else { return applied }
        let names = updates.values.flatMap(\.keys) + creates.values.flatMap { $0.map(\.recordName) } + retired.values.flatMap { $0 }
        let trustByName = Dictionary(self.configuration.providers.map { ($0.name, $0.trust) }, uniquingKeysWith: { a, _ in a })
        let (zoneUpdates, zoneCreates, movesConfirmed) = (updates, creates, confirmedMoves)
        let outcome = Mutex(Applied())
        let stamp = ChangeStamp(timestamp: now, userRecordName: "_canonicalImport", deviceID: "feed " + provider.name)
        try await self.records.rewriteZones(zones, in: database, only: names, stamp: stamp, logger: self.logger) { stored in
            var result = Applied()
            var drafts: [String: [RecordDraft]] = [:]
            for zone in zones {
                for (id, (reported, day, venue)) in (zoneUpdates[zone] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    guard let record = stored[zone]?[id], !record.deleted else { continue }
                    switch GameUpdate.apply(
                        reported, trust: provider.trust, to: record, localDate: day, sport: catalog.sports[reported.league], now: now,
                        movesDays: movesConfirmed.contains(id), venue: venue, trustOf: { trustByName[$0] })
                    {
                    case .changed(let fields, _):
                        drafts[zone, default: []].append(RecordDraft(recordName: id, recordType: "Game", fields: fields))
                        result.changed += 1
                    case .unchanged: break
                    case .refused(let why): result.refused.append("\(provider.name) \(reported.id) (\(id)): \(why)")
                    }
                }
                for id in retired[zone] ?? [] {
                    guard let record = stored[zone]?[id], !record.deleted,
                        case .changed(let fields, _) = GameUpdate.retire(record, provider: provider.name, now: now)
                    else { continue }
                    drafts[zone, default: []].append(RecordDraft(recordName: id, recordType: "Game", fields: fields))
                    result.changed += 1
                }
                // A game another process added meanwhile is not added twice.
                for draft in zoneCreates[zone] ?? [] where stored[zone]?[draft.recordName] == nil {
                    drafts[zone, default: []].append(draft)
                    result.created += 1
                }
            }
            outcome.withLock { $0 = result }
            return drafts
        }
        let written = outcome.withLock { $0 }
        applied.changed = written.changed
        applied.created = written.created
        applied.refused += written.refused
        return applied
    }

    /// The games an answer should have listed and did not, twice in a row, by zone: dropped from the schedule, or
    /// if-necessary games not needed (docs/FEEDS.md, "Games dropped from the schedule"). Only an answer its league
    /// trusts for that (an official source's, or where there is none the provider's), only games not yet played or
    /// under way, only the days inside those asked (a provider's day and a venue's can differ by one at the edges),
    /// and only when the answer lists games and lacks few (more is the provider's error, not the schedule's).
    func retiring(
        _ index: GameIndex, listed: Set<String>, in games: [ProviderGame], from provider: any ScoreProvider, days: ClosedRange<CivilDate>,
        answer: Int,
        applied: inout Applied
    ) -> [String: [String]] {
        self.absent.withLock { absent in for id in listed { absent[id] = nil } }
        guard days.upperBound >= days.lowerBound.adding(days: 2), let league = games.first?.league,
            provider.trust == .official || !self.configuration.hasOfficialSource(league)
        else { return [:] }
        let inside = days.lowerBound.adding(days: 1)...days.upperBound.adding(days: -1)
        let expected = index.games(on: inside, GameIndex.Filter(leagues: [league])).filter { game in
            [Game.Status.scheduled, .postponed, .delayed].contains(Game.Status(rawValue: game.status) ?? .scheduled)
        }
        let missing = expected.filter { !listed.contains($0.id) }
        guard missing.count <= max(2, expected.count / 10) else {
            applied.refused.append(
                "\(provider.name): lacks \(missing.count) of the \(expected.count) games of \(inside.lowerBound)…\(inside.upperBound); none retired")
            return [:]
        }
        var retired: [String: [String]] = [:]
        let abbreviation = String(league.dropFirst("league_".count))
        self.absent.withLock { absent in
            for game in missing {
                if let first = absent[game.id], first < answer {
                    retired[CanonicalDataset.gameZone("\(abbreviation)_\(game.season)"), default: []].append(game.id)
                } else if absent[game.id] == nil {
                    absent[game.id] = answer
                }
            }
        }
        return retired
    }

    /// A reported game's key among the held games.
    static func heldKey(_ reported: ProviderGame) -> String { reported.league + "|" + reported.provider + "|" + reported.id }

    static let heldGamesJob = "held games"

    /// Keeps the new games held for an operator (a venue the directory lacks) in PostgreSQL, those added since let go
    /// and those not reported for 14 days forgotten; the list is the job `held games`'s last run on the console's jobs
    /// page.
    func hold(_ held: [String: String], releasing added: Set<String>) async {
        guard !held.isEmpty || !added.isEmpty else { return }
        let now = self.clock.now
        do {
            let saved = try await self.records.jobStates(logger: self.logger)[Self.heldGamesJob].flatMap { try? JSONValue.parse(Array($0.utf8)) }
            var games = saved?.objectValue ?? [:]
            for key in added { games[key] = nil }
            games = games.filter { ($0.value["seenAt"]?.int64Value ?? 0) > now - 14 * 86_400_000 }
            for (key, description) in held { games[key] = ["description": .string(description), "seenAt": .int(now)] }
            guard JSONValue.object(games) != saved ?? .object([:]) else { return }
            try await self.records.saveJobState(Self.heldGamesJob, JSONWriter.encode(.object(games)), at: now, logger: self.logger)
            let list = games.values.compactMap { $0["description"]?.stringValue }.sorted()
            let outcome = list.isEmpty ? "none held" : "\(list.count) held for an operator: " + list.joined(separator: "; ")
            await self.recordRun(job: Self.heldGamesJob, started: now, outcome: outcome, succeeded: list.isEmpty)
        } catch {
            self.logger.error("the games held for an operator could not be kept", metadata: ["error": "\(error)"])
        }
    }
}
