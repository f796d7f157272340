import CloudRuntime
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on 127.0.0.1 between one client and a server (PostgreSQL) that hands the server's bytes on only as the
/// test says: all of them, none for now (`hold`), a number of them (`release`), or a last number and then the end of
/// the connection (`cut`): what a server that goes away mid-answer does to its client, at the byte the test picks.
/// Its sockets block, so each direction is copied on a thread of its own (see `RawConnection`).
final class HeldRelay: Sendable {
    struct Failed: Error {}

    private struct State {
        var client: Int32 = -1
        var server: Int32 = -1
        /// The server's bytes not handed on yet.
        var held: [UInt8] = []
        /// How many more of them may go to the client; nil: all.
        var allowance: Int?
    }

    let port: Int
    private let listener: Int32
    private let state = Mutex(State())

    /// Listens for one client and relays it to the server on `serverPort`.
    init(to serverPort: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = RawConnection.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(listener)
            throw Failed()
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in self.serve(serverPort) }
    }

    /// Hands nothing more on until `release` or `cut`.
    func hold() { self.state.withLock { $0.allowance = 0 } }

    /// How many of the server's bytes wait to be handed on.
    var heldBytes: Int { self.state.withLock { $0.held.count } }
    /// Changed whenever the server's bytes come or go.
    let heldChanges = StateSignal()

    /// Hands `count` more of the server's bytes on, now and as they come.
    func release(_ count: Int) {
        self.state.withLock { state in
            state.allowance = (state.allowance ?? 0) + count
            Self.handOn(&state)
        }
    }

    /// Hands `count` more bytes on, then ends the client's connection (FIN) and the server's.
    func cut(after count: Int) {
        self.state.withLock { state in
            state.allowance = (state.allowance ?? 0) + count
            Self.handOn(&state)
            state.allowance = 0
            shutdown(state.client, Int32(SHUT_RDWR))
            shutdown(state.server, Int32(SHUT_RDWR))
        }
    }

    private func serve(_ serverPort: Int) {
        let client = accept(self.listener, nil, nil)
        Glibc.close(self.listener)
        guard client >= 0, let server = (try? RawConnection(port: serverPort))?.descriptor else {
            Glibc.close(client)
            return
        }
        self.state.withLock { ($0.client, $0.server) = (client, server) }
        Thread.detachNewThread {
            Self.copy(from: client, to: server)
            Glibc.close(client)
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(server, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            self.state.withLock { state in
                state.held += buffer[0..<count]
                Self.handOn(&state)
            }
            self.heldChanges.changed()
        }
        Glibc.close(server)
    }

    private static func handOn(_ state: inout State) {
        let count = min(state.held.count, state.allowance ?? state.held.count)
        guard count > 0 else { return }
        _ = state.held.withUnsafeBytes { send(state.client, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
        state.held.removeFirst(count)
        state.allowance = state.allowance.map { $0 - count }
    }

    private static func copy(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(source, &buffer, buffer.count, 0)
            guard count > 0, send(destination, buffer, count, Int32(MSG_NOSIGNAL)) == count else { return }
        }
    }
}
