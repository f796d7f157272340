import CloudCore
import Foundation
import SportsDomain

/// ESPN's scoreboard (`site.api.espn.com/apis/site/v2/sports/{sport}/{league}/scoreboard?dates=YYYYMMDD[-YYYYMMDD]`):
/// every league we carry, unofficial. A game's state is `status.type` (`name` such as `STATUS_IN_PROGRESS`, `state`
/// pre/in/post, `completed`); teams are `competitions[0].competitors` with `homeAway`.
public struct ESPNScoreboard: ScoreProvider {
    public let name = "espn"
    public let trust = ProviderTrust.unofficial
    public let requestsPerSecond = 1.0
    public init() {}

    /// ESPN's sport and league path per canonical league.
    static let paths = [
        "league_mlb": "baseball/mlb", "league_nfl": "football/nfl", "league_nba": "basketball/nba", "league_nhl": "hockey/nhl",
        "league_wnba": "basketball/wnba", "league_mls": "soccer/usa.1", "league_nwsl": "soccer/usa.nwsl",
    ]
    public var leagues: [String] { Self.paths.keys.sorted() }

    public func path(league: String, days: ClosedRange<CivilDate>, today: CivilDate) -> String? {
        guard let path = Self.paths[league] else { return nil }
        func compact(_ day: CivilDate) -> String { day.description.replacingOccurrences(of: "-", with: "") }
        let dates = days.lowerBound == days.upperBound ? compact(days.lowerBound) : compact(days.lowerBound) + "-" + compact(days.upperBound)
        return "/\(path)/scoreboard?dates=\(dates)&limit=1000"
    }

    public func parse(_ body: [UInt8], league: String) throws -> (games: [ProviderGame], skipped: [String]) {
        let json = try ProviderJSON.parse(body)
        guard let events = json["events"]?.arrayValue else { throw ProviderAnswerError("an ESPN scoreboard has events") }
        var games: [ProviderGame] = []
        var skipped: [String] = []
        for event in events {
            let id = event["id"]?.stringValue ?? "?"
            // Preseason and exhibition games are not canonical games.
            if event["season"]?["type"]?.int64Value == 1 || event["season"]?["slug"]?.stringValue == "preseason" { continue }
            // All-star games are between no franchise teams.
            let name = event["name"]?.stringValue ?? ""
            if name.contains("All-Star") || name.contains("Pro Bowl") { continue }
            guard let competition = event["competitions"]?[0], let competitors = competition["competitors"]?.arrayValue,
                let home = competitors.first(where: { $0["homeAway"]?.stringValue == "home" }),
                let away = competitors.first(where: { $0["homeAway"]?.stringValue == "away" }),
                let start = ProviderJSON.time(event["date"]?.stringValue ?? competition["date"]?.stringValue),
                let statusType = (event["status"] ?? competition["status"])?["type"], let status = Self.status(statusType)
            else {
                skipped.append("espn \(id): not a game with two teams, a start time and a known status")
                continue
            }
            let live = status == .live || status == .suspended || status == .delayed
            let hasScore = live || status == .final
            func side(_ competitor: JSONValue) -> ProviderGame.Side {
                let team = competitor["team"]
                let names = [
                    team?["displayName"]?.stringValue, team?["location"]?.stringValue.map { $0 + " " + (team?["name"]?.stringValue ?? "") },
                    team?["shortDisplayName"]?.stringValue, team?["abbreviation"]?.stringValue,
                ]
                return ProviderGame.Side(
                    names: names.compactMap { $0?.trimmingCharacters(in: .whitespaces) },
                    score: hasScore ? ProviderJSON.score(competitor["score"]) : nil)
            }
            let eventStatus = event["status"] ?? competition["status"]
            let period = eventStatus?["period"]?.int64Value.map { Int($0) }
            games.append(
                ProviderGame(
                    provider: self.name, league: league, id: id, season: Self.season(event["season"]?["year"]?.int64Value, league: league),
                    gameType: event["season"]?["type"]?.int64Value == 3 ? "playoff" : nil,
                    startTime: start, timeTBD: competition["timeValid"]?.boolValue == false, status: status,
                    period: status == .scheduled || period == 0 ? nil : period,
                    clock: live ? eventStatus?["displayClock"]?.stringValue : nil,
                    detail: status == .scheduled ? nil : statusType["shortDetail"]?.stringValue, home: side(home), away: side(away),
                    venue: competition["venue"]?["fullName"]?.stringValue, broadcasts: Self.broadcasts(competition)))
        }
        return (games, skipped)
    }

    /// `broadcasts[].names` (national, then the teams' markets), else `geoBroadcasts[].media.shortName` less radio.
    static func broadcasts(_ competition: JSONValue) -> [String] {
        let names = (competition["broadcasts"]?.arrayValue ?? []).flatMap { $0["names"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
        guard names.isEmpty else { return names }
        return (competition["geoBroadcasts"]?.arrayValue ?? []).filter { $0["type"]?["shortName"]?.stringValue?.lowercased() != "radio" }
            .compactMap { $0["media"]?["shortName"]?.stringValue }
    }

    /// The season's start year: ESPN names a season that straddles two years (NBA, NHL) by its end year.
    static func season(_ year: Int64?, league: String) -> Int? {
        guard let year else { return nil }
        return Int(year) - (["league_nba", "league_nhl"].contains(league) ? 1 : 0)
    }

    /// The canonical status of ESPN's `status.type`; nil when it says nothing we know.
    static func status(_ type: JSONValue) -> Game.Status? {
        switch type["name"]?.stringValue ?? "" {
        case "STATUS_SCHEDULED", "STATUS_TBD": return .scheduled
        case "STATUS_POSTPONED": return .postponed
        case "STATUS_CANCELED", "STATUS_CANCELLED", "STATUS_FORFEIT": return .cancelled
        case "STATUS_SUSPENDED": return .suspended
        case "STATUS_DELAYED", "STATUS_RAIN_DELAY": return .delayed
        default: break
        }
        switch type["state"]?.stringValue {
        case "pre": return .scheduled
        case "in": return .live
        case "post" where type["completed"]?.boolValue == true: return .final
        default: return nil
        }
    }
}
