import CloudCore
import Foundation

/// What a visit records beyond venue and day: the game, as the person saw it, its score and where it came from, and
/// the seat. Every field is optional; in `setDetails` a nil field is left as it is.
public struct VisitDetails: Sendable, Equatable {
    /// Who sets fields: the person (remembered in `correctedFields`) or an automatic fill, which never overwrites
    /// what the person set.
    public enum Author: Sendable { case person, automatic }

    /// The sport the visit was for (`baseball`): at a venue two leagues share, it decides which league it counts for.
    public var sport: String?
    /// The canonical game (`game_mlb_2025_…`), when known.
    public var gameID: String?
    public var homeTeamID, awayTeamID: String?
    /// Team names as displayed at the time (`Oakland Athletics`).
    public var homeTeamName, awayTeamName: String?
    public var homeScore, awayScore: Int?
    /// `trip`, `manual` or `photo`.
    public var source: String?
    /// Where the score came from (`canonical`, `manual`), and whether it is still to be looked up.
    public var scoreSource: String?
    public var scoreResolutionPending: Bool?
    /// A game the canonical data does not have, in the person's words.
    public var manualGameDescription: String?
    public var seatSection, seatRow, seatNumber: String?
    /// When a multi-day visit ended (ms), and where and when the photo that logged it was taken.
    public var endDate, photoCaptureDate: Int64?
    public var photoLatitude, photoLongitude: Double?

    public init(
        sport: String? = nil, gameID: String? = nil, homeTeamID: String? = nil, awayTeamID: String? = nil, homeTeamName: String? = nil,
        awayTeamName: String? = nil, homeScore: Int? = nil, awayScore: Int? = nil, source: String? = nil, scoreSource: String? = nil,
        scoreResolutionPending: Bool? = nil, manualGameDescription: String? = nil, seatSection: String? = nil, seatRow: String? = nil,
        seatNumber: String? = nil, endDate: Int64? = nil, photoCaptureDate: Int64? = nil, photoLatitude: Double? = nil,
        photoLongitude: Double? = nil
    ) {
        (self.sport, self.gameID, self.homeTeamID, self.awayTeamID) = (sport, gameID, homeTeamID, awayTeamID)
        (self.homeTeamName, self.awayTeamName, self.homeScore, self.awayScore) = (homeTeamName, awayTeamName, homeScore, awayScore)
        (self.source, self.scoreSource, self.scoreResolutionPending) = (source, scoreSource, scoreResolutionPending)
        (self.manualGameDescription, self.seatSection, self.seatRow, self.seatNumber) = (manualGameDescription, seatSection, seatRow, seatNumber)
        (self.endDate, self.photoCaptureDate, self.photoLatitude, self.photoLongitude) = (endDate, photoCaptureDate, photoLatitude, photoLongitude)
    }

    /// The schema field each property is stored in, with its value (only the set ones).
    var fields: [String: FieldValue?] {
        func string(_ value: String?) -> FieldValue? { value.map { FieldValue(type: .string, value: .string($0)) } }
        func reference(_ value: String?) -> FieldValue? { value.map { FieldValue(type: .reference, value: Reference(recordName: $0).json) } }
        func int(_ value: Int?) -> FieldValue? { value.map { FieldValue(type: .int64, value: .int(Int64($0))) } }
        func time(_ value: Int64?) -> FieldValue? { value.map { FieldValue(type: .timestamp, value: .int($0)) } }
        let place = self.photoLatitude.flatMap { latitude in
            self.photoLongitude.map { FieldValue(type: .location, value: ["latitude": .double(latitude), "longitude": .double($0)]) }
        }
        let all: [String: FieldValue?] = [
            "sport": string(self.sport), "game": reference(self.gameID), "homeTeam": reference(self.homeTeamID),
            "awayTeam": reference(self.awayTeamID), "homeTeamName": string(self.homeTeamName), "awayTeamName": string(self.awayTeamName),
            "homeScore": int(self.homeScore), "awayScore": int(self.awayScore), "source": string(self.source),
            "scoreSource": string(self.scoreSource), "scoreResolutionPending": int(self.scoreResolutionPending.map { $0 ? 1 : 0 }),
            "manualGameDescription": string(self.manualGameDescription), "seatSection": string(self.seatSection),
            "seatRow": string(self.seatRow), "seatNumber": string(self.seatNumber), "endDate": time(self.endDate),
            "photoCaptureDate": time(self.photoCaptureDate), "photoLocation": place,
        ]
        return all.filter { $0.value != nil }
    }

    /// The details a stored visit holds.
    init(_ fields: [String: FieldValue]) {
        func string(_ name: String) -> String? { fields[name]?.value.stringValue }
        func reference(_ name: String) -> String? { fields[name]?.value["recordName"]?.stringValue }
        func int(_ name: String) -> Int? { fields[name]?.value.int64Value.map { Int($0) } }
        self.init(
            sport: string("sport"), gameID: reference("game"), homeTeamID: reference("homeTeam"), awayTeamID: reference("awayTeam"),
            homeTeamName: string("homeTeamName"), awayTeamName: string("awayTeamName"), homeScore: int("homeScore"), awayScore: int("awayScore"),
            source: string("source"), scoreSource: string("scoreSource"), scoreResolutionPending: int("scoreResolutionPending").map { $0 != 0 },
            manualGameDescription: string("manualGameDescription"), seatSection: string("seatSection"), seatRow: string("seatRow"),
            seatNumber: string("seatNumber"), endDate: fields["endDate"]?.value.int64Value,
            photoCaptureDate: fields["photoCaptureDate"]?.value.int64Value, photoLatitude: fields["photoLocation"]?.value["latitude"]?.doubleValue,
            photoLongitude: fields["photoLocation"]?.value["longitude"]?.doubleValue)
    }
}
