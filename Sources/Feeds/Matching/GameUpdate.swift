import Canon
import CloudCore
import Foundation
import SportsDomain

/// What a provider's report changes on a stored `Game` record (docs/FEEDS.md, "What a feed may change"). Pure: the
/// writer calls it inside the transaction, on the record as stored then.
enum GameUpdate {
    enum Outcome: Equatable {
        /// The record's new fields and the names of those that changed.
        case changed([String: FieldValue], fields: [String])
        case unchanged
        /// The report is not applied, and why (logged and counted; the game stays as it was).
        case refused(String)
    }

    /// Highest score a sport's game can plausibly end with; more is a provider's error.
    static func maximumScore(sport: String?) -> Int {
        switch sport {
        case "basketball": 250
        case "american_football": 120
        case "baseball": 60
        default: 30
        }
    }

    /// - Parameters:
    ///   - localDate: the report's day at the game's venue.
    ///   - movesDays: the report may move the game to another day although its provider is not official (its league
    ///     has no official source, and the provider's earlier answer said the same).
    ///   - venue: where an official source now plays the game, when it names another of the directory's venues.
    ///   - trustOf: the trust of the provider that last wrote the game (`liveSource`).
    static func apply(
        _ reported: ProviderGame, trust: ProviderTrust, to stored: Record, localDate: CivilDate, sport: String?, now: Int64,
        movesDays: Bool = false, venue: Venue? = nil, trustOf: (String) -> ProviderTrust?
    ) -> Outcome {
        var fields = stored.fields
        let storedStatus = fields["status"]?.value.stringValue.flatMap(Game.Status.init(rawValue:)) ?? .scheduled
        let maximum = Self.maximumScore(sport: sport)
        for score in [reported.home.score, reported.away.score].compactMap({ $0 }) where score < 0 || score > maximum {
            return .refused("impossible score \(reported.home.score ?? 0)-\(reported.away.score ?? 0) for \(sport ?? "this sport")")
        }
        // A final reported by a more trusted source (the dataset's results count as official) stands.
        let source = fields["liveSource"]?.value.stringValue
        if storedStatus == .final, source != reported.provider, (source.flatMap(trustOf) ?? .official) < trust {
            let same =
                reported.status == .final && fields["homeScore"]?.value.int64Value == reported.home.score.map(Int64.init)
                && fields["awayScore"]?.value.int64Value == reported.away.score.map(Int64.init)
            return same ? .unchanged : .refused("disagrees with \(source ?? "the dataset"), which is more trusted and has the game final")
        }
        if storedStatus == .final, reported.status == .scheduled || reported.status == .live, trust != .official {
            return .refused("reports a final game as \(reported.status.rawValue)")
        }
        // The original slot of a game already moved to its make-up is listed as postponed on its old day for ever.
        if reported.status == .postponed, let start = fields["startTime"]?.value.int64Value, start > reported.startTime + 3_600_000 {
            return .unchanged
        }
        let storedDay = fields["localDate"]?.value.stringValue.flatMap { CivilDate($0) }
        if let storedDay, storedDay != localDate, trust != .official, !movesDays {
            return .refused(
                "moves the game from \(storedDay) to \(localDate): a move by days needs an official source, or where a league has none the "
                    + "provider's next answer")
        }

        func set(_ name: String, _ value: FieldValue?) { fields[name] = value }
        set("status", .string(reported.status.rawValue))
        let scored = reported.status == .live || reported.status == .final || reported.status == .suspended || reported.status == .delayed
        if scored, let home = reported.home.score, let away = reported.away.score {
            set("homeScore", .int(home))
            set("awayScore", .int(away))
        } else if reported.status == .scheduled || reported.status == .postponed || reported.status == .cancelled {
            set("homeScore", nil)
            set("awayScore", nil)
        }
        set("period", reported.period.map(FieldValue.int))
        set("clock", reported.clock.map(FieldValue.string))
        set("statusDetail", reported.detail.map(FieldValue.string))
        // Kept from the provider that last named any: most providers list none (MLB's, the NBA's).
        if let broadcasts = reported.broadcasts { set("broadcasts", FieldValue(type: .stringList, value: .array(broadcasts.map(JSONValue.string)))) }
        // A postponed game keeps its day until the provider names the make-up's.
        if reported.status != .postponed {
            set("startTime", FieldValue(type: .timestamp, value: .int(reported.startTime)))
            set("localDate", .string(localDate.description))
            set("timeTBD", .int(reported.timeTBD ? 1 : 0))
        }
        if let venue {
            set("stadium", .reference(venue.id))
            set("neutralSite", .int(venue.neutral ? 1 : 0))
        }
        var ids = Set(fields["feedIds"]?.value.arrayValue?.compactMap(\.stringValue) ?? [])
        ids.insert(reported.provider + ":" + reported.id)
        set("feedIds", FieldValue(type: .stringList, value: .array(ids.sorted().map(JSONValue.string))))

        // What an operator corrected by hand stays as it is.
        for name in fields[Game.pinnedFieldsField]?.value.arrayValue?.compactMap(\.stringValue) ?? [] { fields[name] = stored.fields[name] }
        let changed = Set(fields.keys).union(stored.fields.keys).filter { fields[$0] != stored.fields[$0] }.sorted()
        guard !changed.isEmpty else { return .unchanged }
        // Learning one more id of a game is not news about it: only a change of its state makes it the feed's.
        if changed != ["feedIds"] {
            fields["liveSource"] = .string(reported.provider)
            fields["liveUpdatedAt"] = FieldValue(type: .timestamp, value: .int(now))
        }
        return .changed(fields, fields: changed)
    }

    /// A game only an official provider knows (a game added mid-season, a season the dataset does not have yet),
    /// as a new canonical record; nil when the report lacks the season.
    /// A game its source's schedule no longer lists (dropped, or an if-necessary game not needed): cancelled, never
    /// deleted, so devices following its season see it change. A game played or under way, and a status an operator
    /// pinned, stay.
    static func retire(_ stored: Record, provider: String, now: Int64) -> Outcome {
        var fields = stored.fields
        let status = fields["status"]?.value.stringValue.flatMap(Game.Status.init(rawValue:)) ?? .scheduled
        let pinned = fields[Game.pinnedFieldsField]?.value.arrayValue?.contains(.string("status")) == true
        guard [.scheduled, .postponed, .delayed].contains(status), !pinned else { return .unchanged }
        fields["status"] = .string(Game.Status.cancelled.rawValue)
        fields["statusDetail"] = .string("Not on \(provider)'s schedule")
        for name in ["homeScore", "awayScore", "period", "clock"] { fields[name] = nil }
        fields["liveSource"] = .string(provider)
        fields["liveUpdatedAt"] = FieldValue(type: .timestamp, value: .int(now))
        return .changed(fields, fields: ["status", "statusDetail"])
    }

    /// A game's venue, and whether it is another than its home team's home.
    struct Venue: Equatable {
        var id: String
        var neutral: Bool
    }

    static func newGame(
        _ reported: ProviderGame, league: (id: String, abbreviation: String), home: String, away: String, venue: Venue, localDate: CivilDate,
        sport: String?, now: Int64
    ) -> (zone: String, draft: RecordDraft)? {
        guard let season = reported.season else { return nil }
        let straddles = ["nba", "nhl"].contains(league.abbreviation)
        let label = straddles ? "\(season)-" + String(String(season + 1).suffix(2)) : String(season)
        let id = "game_\(league.abbreviation)_\(season)_\(reported.id)"
        var fields: [String: FieldValue] = [
            "canonicalId": .string(id), "uuid": .string(CanonicalID.uuid(for: id).uuidString), "league": .reference(league.id),
            "season": .int(season), "seasonLabel": .string(label), "gameType": .string(reported.gameType ?? "regular"),
            "homeTeam": .reference(home), "awayTeam": .reference(away), "stadium": .reference(venue.id), "neutralSite": .int(venue.neutral ? 1 : 0),
            "source": .string(CanonicalImportPlan.feedSourcePrefix + reported.provider), "sourceGameId": .string(reported.id),
        ]
        fields["startTime"] = FieldValue(type: .timestamp, value: .int(reported.startTime))
        fields["localDate"] = .string(localDate.description)
        fields["timeTBD"] = .int(reported.timeTBD ? 1 : 0)
        fields["status"] = .string(Game.Status.scheduled.rawValue)
        let stamp = ChangeStamp(timestamp: now, userRecordName: "_feed", deviceID: reported.provider)
        let record = Record(recordName: id, recordType: "Game", changeSeq: 0, fields: fields, created: stamp, modified: stamp)
        guard
            case .changed(let updated, _) = Self.apply(
                reported, trust: .official, to: record, localDate: localDate, sport: sport, now: now, trustOf: { _ in nil })
        else { return nil }
        return (CanonicalDataset.gameZone("\(league.abbreviation)_\(season)"), RecordDraft(recordName: id, recordType: "Game", fields: updated))
    }
}
