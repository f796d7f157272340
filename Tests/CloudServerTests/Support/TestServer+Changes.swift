import CloudCore
import Testing

/// The change endpoints: a zone pulled page by page, as a device does.
extension TestServer {
    /// Pulls a zone from `token` until moreComing is false; returns the records seen and the final token.
    func pull(
        zone: String = "_defaultZone", from token: String? = nil, limit: Int = 200, as account: TestAccount? = nil, database: String = "private"
    ) async throws -> (records: [JSONValue], token: String) {
        var token = token
        var records: [JSONValue] = []
        while true {
            var entry: [String: JSONValue] = ["zoneID": ["zoneName": .string(zone)], "resultsLimit": .int(Int64(limit))]
            if let token { entry["syncToken"] = .string(token) }
            let reply = try await self.call(
                "changes/zone", ["zones": [.object(entry)]], database: database, as: account ?? (database == "private" ? self.alice : nil))
            let result = try #require(reply.json["zones"]?[0])
            guard let next = result["syncToken"]?.stringValue else {
                throw CloudError(
                    ServerErrorCode(rawValue: result["serverErrorCode"]?.stringValue ?? "") ?? .internalError, result["reason"]?.stringValue ?? "")
            }
            records += result["records"]?.arrayValue ?? []
            token = next
            if result["moreComing"] != true { return (records, next) }
        }
    }
}
