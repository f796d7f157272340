import Foundation
#if canImport(Glibc)
    import Glibc
#endif

/// A TCP connection to a test server on 127.0.0.1 that sends exactly what it is given and closes when told: a client
/// that goes away mid-request, or never finishes one, as no HTTP client library lets a test do. Its reads block, so
/// they run on a thread of their own: on Swift's cooperative threads (two on a 2-core machine) two blocked reads left
/// the server in the same process no thread to answer them on, and every live test stalled.
struct RawConnection {
    let descriptor: Int32

    struct Failed: Error {}

    /// Connects to `port` on 127.0.0.1 from `source` (another loopback address, 127.0.0.2: another client).
    init(port: Int, from source: String? = nil) throws {
        self.descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard self.descriptor >= 0 else { throw Failed() }
        if let source {
            var local = Self.loopback(port: 0)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(self.descriptor)
                throw Failed()
            }
        }
        var address = Self.loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(self.descriptor)
            throw Failed()
        }
    }

    func send(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.send(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func close() { Glibc.close(self.descriptor) }

    /// Closes with a reset (RST) instead of a FIN, as a phone changing network does to the server's side of the
    /// connection: a zero linger time makes `close` drop the connection at once.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(self.descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(self.descriptor)
    }

    /// `port` on 127.0.0.1, as the socket calls take it.
    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

extension RawConnection {
    /// Everything the server sends until it closes the connection (or `limit` bytes).
    func receiveUntilClosed(limit: Int = 65_536) async -> String {
        await Self.offTheCooperativePool { self.blockingReceiveUntilClosed(limit: limit) }
    }

    private func blockingReceiveUntilClosed(limit: Int) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < limit {
            let count = buffer.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

extension RawConnection {
    /// Sends `GET path` on a kept-alive connection and reads one answer (its head, and its body by Content-Length or
    /// to the last chunk, or to the close).
    func get(_ path: String) async -> String {
        self.send("GET \(path) HTTP/1.1\r\nHost: test\r\n\r\n")
        return await Self.offTheCooperativePool { self.blockingReadAnswer() }
    }

    private func blockingReadAnswer() -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let body = text[end.upperBound...]
                if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                    let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)), body.utf8.count >= length
                {
                    return text
                }
                if head.contains("transfer-encoding: chunked"), body.hasSuffix("0\r\n\r\n") { return text }
            }
            let count = buffer.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return text }
            received += buffer[0..<count]
        }
    }
}

extension RawConnection {
    static func offTheCooperativePool<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: body()) }
        }
    }
}
