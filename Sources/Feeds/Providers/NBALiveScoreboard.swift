import CloudCore
import Foundation
import SportsDomain

/// The NBA's live scoreboard on its CDN (`cdn.nba.com/static/json/liveData/scoreboard/todaysScoreboard_00.json`):
/// unofficial (not a documented API), today's games only. `gameStatus` 1 scheduled, 2 live, 3 final; the clock is an
/// ISO 8601 duration (`PT07M15.00S`); there is no venue; the season is in the id (`0022600001`: 2026-27).
public struct NBALiveScoreboard: ScoreProvider {
    public let name = "nba-cdn"
    public let trust = ProviderTrust.unofficial
    public let requestsPerSecond = 2.0
    public let leagues = ["league_nba"]
    public init() {}

    public func path(league: String, days: ClosedRange<CivilDate>, today: CivilDate) -> String? {
        guard league == "league_nba", days == today...today else { return nil }
        return "/static/json/liveData/scoreboard/todaysScoreboard_00.json"
    }

    /// Game type by the id's third digit group (`0022500001`: 002 regular season).
    static let gameTypes = ["002": "regular", "004": "playoff", "005": "playin", "006": "cup"]

    public func parse(_ body: [UInt8], league: String) throws -> (games: [ProviderGame], skipped: [String]) {
        let json = try ProviderJSON.parse(body)
        guard let listed = json["scoreboard"]?["games"]?.arrayValue else { throw ProviderAnswerError("an NBA scoreboard has scoreboard.games") }
        var games: [ProviderGame] = []
        var skipped: [String] = []
        for game in listed {
            let id = game["gameId"]?.stringValue ?? "?"
            guard let type = Self.gameTypes[String(id.prefix(3))] else { continue }  // preseason, all-star
            let text = game["gameStatusText"]?.stringValue ?? ""
            let status: Game.Status? =
                text.uppercased().hasPrefix("PPD") || text.lowercased().hasPrefix("postponed")
                ? .postponed
                : [1: .scheduled, 2: .live, 3: .final][game["gameStatus"]?.int64Value ?? 0]
            guard let start = ProviderJSON.time(game["gameTimeUTC"]?.stringValue), let status, let home = game["homeTeam"],
                let away = game["awayTeam"]
            else {
                skipped.append("nba-cdn \(id): not a game with two teams, a start time and a known status")
                continue
            }
            let hasScore = status == .live || status == .final
            func side(_ team: JSONValue) -> ProviderGame.Side {
                let city = team["teamCity"]?.stringValue, nickname = team["teamName"]?.stringValue
                let names = [city.flatMap { city in nickname.map { city + " " + $0 } }, nickname, team["teamTricode"]?.stringValue]
                return ProviderGame.Side(names: names.compactMap { $0 }, score: hasScore ? ProviderJSON.score(team["score"]) : nil)
            }
            games.append(
                ProviderGame(
                    provider: self.name, league: league, id: id, season: Int(id.dropFirst(3).prefix(2)).map { 2000 + $0 }, gameType: type,
                    startTime: start, status: status,
                    period: status == .scheduled ? nil : game["period"]?.int64Value.map { Int($0) },
                    clock: status == .live ? Self.clock(game["gameClock"]?.stringValue) : nil,
                    detail: status == .scheduled ? nil : text.trimmingCharacters(in: .whitespaces), home: side(home), away: side(away)))
        }
        return (games, skipped)
    }

    /// `PT07M15.00S` as `7:15`; nil for an empty or unreadable clock.
    static func clock(_ text: String?) -> String? {
        guard let text, text.hasPrefix("PT"), let m = text.firstIndex(of: "M"), let minutes = Int(text[text.index(text.startIndex, offsetBy: 2)..<m]),
            let seconds = Double(text[text.index(after: m)...].dropLast())
        else { return nil }
        let whole = Int(seconds)
        return "\(minutes):" + (whole < 10 ? "0" : "") + String(whole)
    }
}

