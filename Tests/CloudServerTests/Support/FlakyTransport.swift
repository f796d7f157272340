import CloudCore
import CloudSync
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Real HTTP through URLSession, with the network's failures on demand: switched off, answers lost after the
/// server has handled the request, or cut off after a number of requests. Records what was sent.
final class FlakyTransport: HTTPTransport {
    struct Sent: Sendable {
        var method: String
        var path: String
        var idempotencyKey: String?
        var bodyBytes: Int
        var status: Int
        var lost: Bool
    }

    struct State {
        var offline = false
        /// Path fragment → how many more answers to lose.
        var losing: [String: Int] = [:]
        /// Path fragment → after how many more such requests the network goes off.
        var cutAfter: [String: Int] = [:]
        var sent: [Sent] = []
        /// Answers of records/modify lose their `serverRecord`s, as a plain CloudKit server answers.
        var stripServerRecords = false
        /// Called before a request whose path contains the key goes out (once per request).
        var before: [String: @Sendable () async throws -> Void] = [:]
    }

    let state = Mutex(State())
    let base = URLSessionTransport(timeout: 30)

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let path = request.url?.path ?? ""
        let offline = self.state.withLock { state in
            if let fragment = state.cutAfter.keys.first(where: { path.contains($0) }) {
                if state.cutAfter[fragment]! == 0 { state.offline = true } else { state.cutAfter[fragment]! -= 1 }
            }
            return state.offline
        }
        if offline { throw URLError(.notConnectedToInternet) }
        let hooks = self.state.withLock { state in state.before.filter { path.contains($0.key) }.map(\.value) }
        for hook in hooks { try await hook() }
        let answer = try await self.base.send(request)
        let lost = self.state.withLock { state in
            guard let fragment = state.losing.keys.first(where: { path.contains($0) }), state.losing[fragment]! > 0 else { return false }
            state.losing[fragment]! -= 1
            return true
        }
        self.state.withLock {
            $0.sent.append(
                Sent(
                    method: request.httpMethod ?? "GET", path: path, idempotencyKey: request.value(forHTTPHeaderField: "Idempotency-Key"),
                    bodyBytes: request.httpBody?.count ?? 0, status: answer.1.statusCode, lost: lost))
        }
        if lost { throw URLError(.networkConnectionLost) }
        if path.hasSuffix("records/modify"), self.state.withLock({ $0.stripServerRecords }), var json = try? JSONValue.parse(Array(answer.0)),
            let records = json["records"]?.arrayValue
        {
            json = ["records": .array(records.map { record in .object((record.objectValue ?? [:]).filter { $0.key != "serverRecord" }) })]
            return (Data(JSONWriter.encode(json).utf8), answer.1)
        }
        return answer
    }

    var offline: Bool {
        get { self.state.withLock { $0.offline } }
        set { self.state.withLock { $0.offline = newValue } }
    }

    func sent(_ fragment: String) -> [Sent] { self.state.withLock { $0.sent.filter { $0.path.contains(fragment) } } }
}
