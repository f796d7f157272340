import CloudRuntime
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization

/// A score provider on 127.0.0.1 that answers what the test set for each path (recorded answers, or answers derived
/// from them as a day unfolds), 404 or a default answer for anything else, and counts the requests: the feeds' tests never reach the
/// internet. Paths it is told to stall get their headers and a first byte, then nothing until the test ends (a hanging
/// or dripping provider).
final class ReplayServer: Sendable {
    private let answers = Mutex<[String: (status: HTTPResponse.Status, body: [UInt8])]>([:])
    private let asked = Mutex<[String]>([])
    /// What a path nobody set is answered (nil: 404).
    private let otherwise = Mutex<[UInt8]?>(nil)
    /// Answers made for the path asked, before `otherwise` (nil from it: not this one).
    private let made = Mutex<(@Sendable (String) -> [UInt8]?)?>(nil)
    /// Paths starting with one of these stall; `stallsReleased` ends them.
    private let stalled = Mutex<[String]>([])
    private let stallsReleased = ManagedAtomicFlag()
    private let released = StateSignal()
    /// Changed at every request.
    let requestsChanges = StateSignal()

    /// Answers `path` (with its query) with `body` from now on.
    func answer(_ path: String, status: HTTPResponse.Status = .ok, _ body: [UInt8]) {
        self.answers.withLock { $0[path] = (status, body) }
    }

    /// Answers every path not set by `answer` with `body` from now on.
    func answerEverythingElse(_ body: [UInt8]) { self.otherwise.withLock { $0 = body } }

    /// Answers every path not set by `answer` that `make` answers (a season's days, say) with what it makes.
    func answer(making make: @escaping @Sendable (String) -> [UInt8]?) { self.made.withLock { $0 = make } }

    /// Stalls every path starting with `prefix` from now on.
    func stall(_ prefix: String) { self.stalled.withLock { $0.append(prefix) } }

    /// Every path asked so far, in order.
    var requests: [String] { self.asked.withLock { $0 } }

    /// Runs `body` with a replay server listening on a free loopback port, given its base URL.
    static func run(_ body: @Sendable (ReplayServer, String) async throws -> Void) async throws {
        let replay = ReplayServer()
        let router = Router()
        router.get("**") { request, _ -> Response in
            let path = request.uri.description
            replay.asked.withLock { $0.append(path) }
            replay.requestsChanges.changed()
            if replay.stalled.withLock({ $0.contains { path.hasPrefix($0) } }) {
                return Response(
                    status: .ok, headers: [.contentType: "application/json"],
                    body: ResponseBody { writer in
                        try await writer.write(ByteBuffer(string: "{"))
                        while !replay.stallsReleased.isSet {
                            let seen = replay.released.generation
                            if replay.stallsReleased.isSet { break }
                            await replay.released.changed(since: seen)
                        }
                        try await writer.finish(nil)
                    })
            }
            guard
                let answer = replay.answers.withLock({ $0[path] }) ?? replay.made.withLock({ $0 })?(path).map({ (.ok, $0) })
                    ?? replay.otherwise.withLock({ $0.map { (.ok, $0) } })
            else {
                return Response(status: .notFound)
            }
            return Response(
                status: answer.status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            // Stalled answers end before the server stops, whatever the test did.
            defer {
                replay.stallsReleased.set()
                replay.released.changed()
            }
            try await body(replay, "http://127.0.0.1:\(client.port!)")
        }
    }
}
