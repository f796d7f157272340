import CloudCore
import SportsDomain

/// The NHL's web API (`api-web.nhle.com/v1/score/YYYY-MM-DD` for a day, `/v1/schedule/YYYY-MM-DD` for the week from
/// that day): official. A game's state is `gameState` (FUT, PRE, LIVE, CRIT, FINAL, OFF) unless `gameScheduleState`
/// says it will not be played as planned (PPD, SUSP, CNCL).
public struct NHLWebAPI: ScoreProvider {
    public let name = "nhl-web"
    public let trust = ProviderTrust.official
    public let requestsPerSecond = 5.0
    public let leagues = ["league_nhl"]
    public init() {}

    public func path(league: String, days: ClosedRange<CivilDate>, today: CivilDate) -> String? {
        guard league == "league_nhl" else { return nil }
        return days.lowerBound == days.upperBound ? "/v1/score/\(days.lowerBound)" : "/v1/schedule/\(days.lowerBound)"
    }

    public func parse(_ body: [UInt8], league: String) throws -> (games: [ProviderGame], skipped: [String]) {
        let json = try ProviderJSON.parse(body)
        guard let listed = json["games"]?.arrayValue ?? json["gameWeek"]?.arrayValue.map({ $0.flatMap { $0["games"]?.arrayValue ?? [] } }) else {
            throw ProviderAnswerError("an NHL score or schedule answer has games or gameWeek")
        }
        var games: [ProviderGame] = []
        var skipped: [String] = []
        for game in listed {
            let id = game["id"]?.int64Value.map { String($0) } ?? "?"
            let type = game["gameType"]?.int64Value ?? 2
            guard type == 2 || type == 3 else { continue }  // preseason and all-star games are not canonical games
            guard let start = ProviderJSON.time(game["startTimeUTC"]?.stringValue), let status = Self.status(game),
                let home = game["homeTeam"], let away = game["awayTeam"]
            else {
                skipped.append("nhl-web \(id): not a game with two teams, a start time and a known status")
                continue
            }
            let hasScore = status == .live || status == .final || status == .suspended
            func side(_ team: JSONValue) -> ProviderGame.Side {
                let place = team["placeName"]?["default"]?.stringValue
                let nickname = team["commonName"]?["default"]?.stringValue ?? team["name"]?["default"]?.stringValue
                let names = [place.flatMap { place in nickname.map { place + " " + $0 } }, nickname, place, team["abbrev"]?.stringValue]
                return ProviderGame.Side(names: names.compactMap { $0 }, score: hasScore ? ProviderJSON.score(team["score"]) : nil)
            }
            let periodType = game["periodDescriptor"]?["periodType"]?.stringValue
            let clock = game["clock"]
            let detail: String? =
                switch status {
                case .final: periodType == "OT" || periodType == "SO" ? "Final/\(periodType!)" : "Final"
                case .live: clock?["inIntermission"]?.boolValue == true ? "Intermission" : periodType.map { $0 == "REG" ? "" : $0 }
                case .scheduled: nil
                default: game["gameScheduleState"]?.stringValue
                }
            games.append(
                ProviderGame(
                    provider: self.name, league: league, id: id, season: game["season"]?.int64Value.map { Int($0 / 10_000) },
                    gameType: type == 3 ? "playoff" : "regular", startTime: start, timeTBD: game["gameScheduleState"]?.stringValue == "TBD",
                    status: status,
                    period: status == .scheduled ? nil : (game["periodDescriptor"]?["number"] ?? game["period"])?.int64Value.map { Int($0) },
                    clock: status == .live ? clock?["timeRemaining"]?.stringValue : nil, detail: detail?.isEmpty == true ? nil : detail,
                    home: side(home), away: side(away), venue: game["venue"]?["default"]?.stringValue,
                    broadcasts: game["tvBroadcasts"]?.arrayValue?.compactMap { $0["network"]?.stringValue }))
        }
        return (games, skipped)
    }

    /// The canonical status of a game; nil when its state is none we know.
    static func status(_ game: JSONValue) -> Game.Status? {
        switch game["gameScheduleState"]?.stringValue {
        case "PPD": return .postponed
        case "SUSP": return .suspended
        case "CNCL": return .cancelled
        default: break
        }
        switch game["gameState"]?.stringValue {
        case "FUT", "PRE": return .scheduled
        case "LIVE", "CRIT": return .live
        case "FINAL", "OFF": return .final
        default: return nil
        }
    }
}
