import CloudCore
import SportsDomain

/// The MLB Stats API (`statsapi.mlb.com/api/v1/schedule?sportId=1&startDate=…&endDate=…&hydrate=linescore`): MLB's
/// own, official. Games are `dates[].games[]` by `gamePk`; `status.codedGameState` is the state (a postponed game says
/// `abstractGameState` Final with code D, so the code decides, not the abstract state).
public struct MLBStatsAPI: ScoreProvider {
    public let name = "mlb-stats"
    public let trust = ProviderTrust.official
    public let requestsPerSecond = 10.0
    public let leagues = ["league_mlb"]
    public init() {}

    public func path(league: String, days: ClosedRange<CivilDate>, today: CivilDate) -> String? {
        guard league == "league_mlb" else { return nil }
        return "/api/v1/schedule?sportId=1&startDate=\(days.lowerBound)&endDate=\(days.upperBound)&hydrate=linescore"
    }

    public func parse(_ body: [UInt8], league: String) throws -> (games: [ProviderGame], skipped: [String]) {
        let json = try ProviderJSON.parse(body)
        guard let dates = json["dates"]?.arrayValue else { throw ProviderAnswerError("an MLB schedule has dates") }
        var byID: [String: ProviderGame] = [:]
        var order: [String] = []
        var skipped: [String] = []
        for game in dates.flatMap({ $0["games"]?.arrayValue ?? [] }) {
            let id = game["gamePk"]?.int64Value.map { String($0) } ?? "?"
            // Spring training, exhibitions and the All-Star game are not canonical games.
            let type = game["gameType"]?.stringValue ?? "R"
            guard ["R", "F", "D", "L", "W"].contains(type) else { continue }
            guard let start = ProviderJSON.time(game["gameDate"]?.stringValue), let status = Self.status(game["status"]),
                let home = game["teams"]?["home"], let away = game["teams"]?["away"]
            else {
                skipped.append("mlb-stats \(id): not a game with two teams, a start time and a known status")
                continue
            }
            let hasScore = status != .scheduled && status != .postponed && status != .cancelled
            func side(_ side: JSONValue) -> ProviderGame.Side {
                ProviderGame.Side(names: [side["team"]?["name"]?.stringValue].compactMap { $0 }, score: hasScore ? ProviderJSON.score(side["score"]) : nil)
            }
            let line = game["linescore"]
            let inning = line?["currentInning"]?.int64Value.map { Int($0) }
            let detail: String? =
                switch status {
                case .live: line?["inningState"]?.stringValue.flatMap { state in line?["currentInningOrdinal"]?.stringValue.map { state + " " + $0 } }
                case .scheduled: nil
                default: game["status"]?["detailedState"]?.stringValue
                }
            let parsed = ProviderGame(
                provider: self.name, league: league, id: id, season: game["season"]?.stringValue.flatMap { Int($0) },
                gameType: type == "R" ? "regular" : "playoff", startTime: start, timeTBD: game["status"]?["startTimeTBD"]?.boolValue ?? false,
                status: status, period: status == .scheduled ? nil : inning, detail: detail, home: side(home), away: side(away),
                venue: game["venue"]?["name"]?.stringValue, gameNumber: game["gameNumber"]?.int64Value.map { Int($0) })
            // A postponed game is listed again as its make-up under the same gamePk: the make-up is what stands.
            if let listed = byID[id], parsed.status == .postponed, listed.status != .postponed { continue }
            if byID[id] == nil { order.append(id) }
            byID[id] = parsed
        }
        return (order.compactMap { byID[$0] }, skipped)
    }

    /// The canonical status of a game's `status` object; nil when it says nothing we know.
    static func status(_ status: JSONValue?) -> Game.Status? {
        let detailed = status?["detailedState"]?.stringValue ?? ""
        switch status?["codedGameState"]?.stringValue {
        case "S", "P": return detailed.hasPrefix("Delayed") ? .delayed : .scheduled
        case "I", "M", "N": return detailed.hasPrefix("Delayed") ? .delayed : .live
        case "F", "O": return .final
        case "D": return .postponed
        case "C": return .cancelled
        case "T", "U": return .suspended
        default: break
        }
        switch status?["abstractGameState"]?.stringValue {
        case "Preview": return .scheduled
        case "Live": return .live
        default: return nil
        }
    }
}
