import CloudCore
import CloudSync
import Foundation
import SportsDomain

/// A trip poll as the app shows it: the question, its options and each option's votes.
public struct TripPoll: Sendable, Equatable {
    /// What friends are given to see and vote in the poll (the name of its unlisted zone).
    public var shareCode: String
    public var title: String
    public var options: [String]
    /// A trip summary per option (may be empty).
    public var optionSummaries: [String]
    /// Milliseconds since 1970, when the poll closes (nil: open).
    public var closesAt: Int64?
    /// Votes per option, in option order.
    public var votes: [Int]
    /// This person's vote, as an option index.
    public var myVote: Int?
    /// Whose poll it is (a user record name).
    public var creator: String
}

/// Trip polls (`TripPolls`): online, since a poll is shared live state, not the person's own data. Creating one
/// makes an unlisted public zone whose name is the share code; voting again changes one's own vote.
extension StadiumCloudClient {
    /// Creates a poll and returns its share code.
    public func createPoll(title: String, options: [String], summaries: [String] = [], closesAt: Int64? = nil) async throws -> String {
        var secret = [UInt8](repeating: 0, count: 16)
        for index in secret.indices { secret[index] = UInt8.random(in: 0...255) }
        let code = UnlistedZone.prefix + Base64URL.encode(secret)
        let zone: JSONValue = ["zoneName": .string(code)]
        try Self.check(
            try await self.engine.service.call(
                .public, "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": zone]]]], asPerson: true), "zones")
        var fields: [String: JSONValue] = [
            "title": ["value": .string(title)], "options": ["value": .array(options.map(JSONValue.string))],
            "optionSummaries": ["value": .array(summaries.map(JSONValue.string))],
        ]
        if let closesAt { fields["closesAt"] = ["value": .int(closesAt), "type": "TIMESTAMP"] }
        let record: JSONValue = [
            "recordName": .string(TripPolls.pollRecordName), "recordType": .string(TripPolls.pollType), "fields": .object(fields),
        ]
        try Self.check(
            try await self.engine.service.call(
                .public, "records/modify", ["zoneID": zone, "atomic": false, "operations": [["operationType": "create", "record": record]]],
                asPerson: true),
            "records")
        return code
    }

    /// Votes for `option` (an index), or changes this person's vote.
    public func vote(inPoll shareCode: String, option: Int) async throws {
        guard let me = try self.store.setting("userRecordName") else {
            throw SyncError(code: "AUTHENTICATION_REQUIRED", reason: "sign in to vote", status: 0)
        }
        let record: JSONValue = [
            "recordName": .string(TripPolls.voteName(of: me)), "recordType": .string(TripPolls.voteType),
            "fields": ["option": ["value": .int(Int64(option))]],
        ]
        let body: JSONValue = [
            "zoneID": ["zoneName": .string(shareCode)], "atomic": false, "operations": [["operationType": "forceUpdate", "record": record]],
        ]
        try Self.check(try await self.engine.service.call(.public, "records/modify", body, asPerson: true), "records")
    }

    /// The poll and its tally now.
    public func poll(_ shareCode: String) async throws -> TripPoll {
        let zone: JSONValue = ["zoneName": .string(shareCode)]
        let lookup = try await self.engine.service.call(
            .public, "records/lookup", ["zoneID": zone, "records": [["recordName": .string(TripPolls.pollRecordName)]]])
        try Self.check(lookup, "records")
        guard let poll = lookup["records"]?[0], let fields = poll["fields"] else {
            throw SyncError(code: "NOT_FOUND", reason: "no poll has the share code \(shareCode)", status: 404)
        }
        let options = fields["options"]?["value"]?.arrayValue?.compactMap(\.stringValue) ?? []
        var votes = [Int](repeating: 0, count: options.count)
        var mine: Int?
        let me = try self.store.setting("userRecordName").map(TripPolls.voteName(of:))
        var marker: JSONValue?
        repeat {
            var body: [String: JSONValue] = ["zoneID": zone, "query": ["recordType": .string(TripPolls.voteType)]]
            if let marker { body["continuationMarker"] = marker }
            let page = try await self.engine.service.call(.public, "records/query", .object(body))
            for vote in page["records"]?.arrayValue ?? [] {
                guard let option = vote["fields"]?["option"]?["value"]?.int64Value.map(Int.init), votes.indices.contains(option) else { continue }
                votes[option] += 1
                if vote["recordName"]?.stringValue == me { mine = option }
            }
            marker = page["continuationMarker"]
        } while marker != nil
        return TripPoll(
            shareCode: shareCode, title: fields["title"]?["value"]?.stringValue ?? "", options: options,
            optionSummaries: fields["optionSummaries"]?["value"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            closesAt: fields["closesAt"]?["value"]?.int64Value, votes: votes, myVote: mine,
            creator: poll["created"]?["userRecordName"]?.stringValue ?? "")
    }

    /// Throws the first per-item error of an answer's `key` list.
    static func check(_ answer: JSONValue, _ key: String) throws {
        if let failed = answer[key]?.arrayValue?.first(where: { $0["serverErrorCode"] != nil }) {
            throw SyncError(
                code: failed["serverErrorCode"]?.stringValue ?? "UNKNOWN_ERROR", reason: failed["reason"]?.stringValue ?? "", status: 200)
        }
    }
}
