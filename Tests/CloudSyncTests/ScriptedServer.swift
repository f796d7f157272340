import CloudCore
import CloudSync
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A CloudKit Web Services server in a dictionary, behind the device's `HTTPTransport` seam: it keeps records
/// per zone with change numbers, answers `changes/database`, `changes/zone` (paged), `records/modify` and
/// `records/lookup`, and can lose answers after applying them. Enough of the protocol to test the device's
/// outbox and paging offline, in milliseconds; the real server's side is tested in CloudServerTests.
final class ScriptedServer: HTTPTransport {
    struct Request: Sendable {
        var operation: String
        var body: JSONValue
        var bodyBytes: Data
        var idempotencyKey: String?
    }

    struct State {
        /// recordName → (change number, record dictionary) of the private default zone.
        var records: [String: (seq: Int, json: JSONValue)] = [:]
        var seq = 0
        var requests: [Request] = []
        /// How many more `records/modify` answers to lose after applying their writes.
        var loseModifyAnswers = 0
        /// `Idempotency-Key` → the answer first given, as the server keeps it.
        var answered: [String: Data] = [:]
    }

    let state = Mutex(State())
    static let endpoint = ServerEndpoint(baseURL: URL(string: "http://scripted.invalid")!, container: "iCloud.test", apiToken: "token")

    /// Adds a record as another device would have saved it.
    func put(_ name: String, type: String = "Visit", fields: [String: JSONValue] = [:]) {
        self.state.withLock { state in
            state.seq += 1
            state.records[name] = (state.seq, Self.record(name, type: type, fields: .object(fields), tag: state.seq))
        }
    }

    func requests(_ operation: String) -> [Request] { self.state.withLock { $0.requests.filter { $0.operation == operation } } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let path = request.url?.path ?? ""
        let operation = path.split(separator: "/").suffix(2).joined(separator: "/")
        let bytes = request.httpBody ?? Data()
        let body = bytes.isEmpty ? JSONValue.object([:]) : try JSONValue.parse(Array(bytes))
        let key = request.value(forHTTPHeaderField: "Idempotency-Key")
        let (answer, lost) = self.state.withLock { state -> (JSONValue, Bool) in
            state.requests.append(Request(operation: operation, body: body, bodyBytes: bytes, idempotencyKey: key))
            switch operation {
            case "changes/database": return (["zones": [["zoneID": ["zoneName": "_defaultZone"]]], "syncToken": "db", "moreComing": false], false)
            case "changes/zone": return (Self.changes(body, &state), false)
            case "records/modify":
                if let key, let first = state.answered[key] { return (try! JSONValue.parse(Array(first)), false) }
                let answer = Self.modify(body, &state)
                if let key { state.answered[key] = Data(JSONWriter.encode(answer).utf8) }
                defer { state.loseModifyAnswers -= 1 }
                return (answer, state.loseModifyAnswers > 0)
            case "records/lookup":
                let names = (body["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
                return (["records": .array(names.compactMap { state.records[$0]?.json })], false)
            default: return (["serverErrorCode": "BAD_REQUEST", "reason": .string("not scripted: \(operation)")], false)
            }
        }
        if lost { throw URLError(.networkConnectionLost) }
        let status = answer["serverErrorCode"] == nil ? 200 : 400
        let response = HTTPURLResponse(
            url: request.url!, statusCode: status, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"])!
        return (Data(JSONWriter.encode(answer).utf8), response)
    }

    static func record(_ name: String, type: String, fields: JSONValue, tag: Int) -> JSONValue {
        [
            "recordName": .string(name), "recordType": .string(type), "recordChangeTag": .string("t\(tag)"), "fields": fields,
            "zoneID": ["zoneName": "_defaultZone"],
        ]
    }

    /// A page of the zone after the token (a change number), `resultsLimit` records long.
    static func changes(_ body: JSONValue, _ state: inout State) -> JSONValue {
        let entry = body["zones"]?[0]
        let after = entry?["syncToken"]?.stringValue.flatMap(Int.init) ?? 0
        let limit = Int(entry?["resultsLimit"]?.int64Value ?? 200)
        let page = state.records.values.filter { $0.seq > after }.sorted { $0.seq < $1.seq }.prefix(limit)
        let token = page.last?.seq ?? max(after, 0)
        let more = state.records.values.contains { $0.seq > token }
        return [
            "zones": [
                [
                    "zoneID": ["zoneName": "_defaultZone"], "records": .array(page.map(\.json)), "syncToken": .string(String(token)),
                    "moreComing": .bool(more),
                ]
            ]
        ]
    }

    /// Saves every operation (no conflicts: these tests are about delivery, not merging).
    static func modify(_ body: JSONValue, _ state: inout State) -> JSONValue {
        var results: [JSONValue] = []
        for operation in body["operations"]?.arrayValue ?? [] {
            guard let record = operation["record"], let name = record["recordName"]?.stringValue else { continue }
            state.seq += 1
            if operation["operationType"]?.stringValue == "delete" {
                state.records[name] = nil
                results.append(["recordName": .string(name), "deleted": true])
                continue
            }
            let fields = (record["fields"]?.objectValue ?? [:]).merging(state.records[name]?.json["fields"]?.objectValue ?? [:]) { new, _ in new }
            let saved = Self.record(name, type: record["recordType"]?.stringValue ?? "Visit", fields: .object(fields), tag: state.seq)
            state.records[name] = (state.seq, saved)
            results.append(saved)
        }
        return ["records": .array(results)]
    }
}
