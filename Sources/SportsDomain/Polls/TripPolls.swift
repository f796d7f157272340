import CloudCore

/// Trip polls, for planning a trip together: a `TripPoll` record named `poll` in an unlisted zone of the public
/// database, whose name is the poll's share code (`UnlistedZone`: no listing shows it, anyone who has the code
/// reads it), and beside it one `PollVote` per person, named `vote-` and the voter's user record name. The types'
/// permissions (Resources/schema.json) let any signed-in person create them and only their creator change or
/// delete them; these rules say what permissions cannot. Voting again changes one's own vote record.
public enum TripPolls {
    public static let pollType = "TripPoll"
    public static let voteType = "PollVote"
    public static let pollRecordName = "poll"
    public static let maxOptions = 20

    /// The one vote record a person has in a poll.
    public static func voteName(of userRecordName: String) -> String { "vote-" + userRecordName }

    /// What a vote is checked against: the poll of its zone.
    public struct Poll: Sendable {
        public var optionCount: Int
        /// Milliseconds since 1970; nil: open.
        public var closesAt: Int64?

        /// The poll's facts from its stored fields' JSON.
        public init?(fieldsJSON: String) {
            guard let fields = try? JSONValue.parse(Array(fieldsJSON.utf8)) else { return nil }
            self.optionCount = fields["options"]?["value"]?.arrayValue?.count ?? 0
            self.closesAt = fields["closesAt"]?["value"]?.int64Value
        }
    }

    /// Why `record` cannot be saved in `zone` of the public database, or nil. A vote needs the zone's `poll` to
    /// be open at `now` and to have the option voted for.
    public static func refusal(of record: Record, in zone: String, poll: Poll?, now: Int64) -> CloudError? {
        guard record.recordType == Self.pollType || record.recordType == Self.voteType else { return nil }
        guard UnlistedZone.contains(zone) else {
            return .badRequest("trip polls and their votes live in an unlisted zone (\(UnlistedZone.prefix) and the share code), not in \(zone)")
        }
        if record.recordType == Self.pollType {
            guard record.recordName == Self.pollRecordName else {
                return .badRequest("a trip poll is the record named \(Self.pollRecordName) in its zone, not \(record.recordName)")
            }
            let options = record.fields["options"]?.value.arrayValue?.count ?? 0
            guard (2...Self.maxOptions).contains(options) else {
                return .badRequest("a trip poll has 2 to \(Self.maxOptions) options, not \(options)")
            }
            return nil
        }
        let expected = Self.voteName(of: record.created.userRecordName)
        guard record.recordName == expected else {
            return .badRequest("a vote is the record \(expected): one per person and poll, changed to vote again")
        }
        guard let poll else { return .badRequest("zone \(zone) holds no poll to vote in") }
        if let closesAt = poll.closesAt, now >= closesAt { return .badRequest("the poll closed at \(closesAt) (ms since 1970)") }
        guard let option = record.fields["option"]?.value.int64Value, (0..<Int64(poll.optionCount)).contains(option) else {
            return .badRequest("a vote's option is the index of one of the poll's \(poll.optionCount) options, from 0")
        }
        return nil
    }
}
