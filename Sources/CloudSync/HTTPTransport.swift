import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Sends one HTTP request and hands back the answer. `URLSessionTransport` in apps; tests wrap it to lose
/// answers the server did send, which is how a flaky network looks to a device.
public protocol HTTPTransport: Sendable {
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)

    /// Sends one request whose answer, whatever its status, goes to the file `destination` as it arrives: a large
    /// answer (an account export) is never held in memory.
    func download(_ request: URLRequest, to destination: URL) async throws -> HTTPURLResponse
}

extension HTTPTransport {
    /// Through `send`, holding the answer in memory: for transports that wrap another (tests).
    public func download(_ request: URLRequest, to destination: URL) async throws -> HTTPURLResponse {
        let (data, response) = try await self.send(request)
        try data.write(to: destination)
        return response
    }
}

/// The transport over `URLSession` (FoundationNetworking, that is libcurl, on Linux).
public struct URLSessionTransport: HTTPTransport {
    let session: URLSession

    public init(timeout: TimeInterval = 60) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpShouldSetCookies = false
        configuration.urlCache = nil
        self.session = URLSession(configuration: configuration)
    }

    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await self.session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, http)
    }

    public func download(_ request: URLRequest, to destination: URL) async throws -> HTTPURLResponse {
        let (file, response) = try await self.session.download(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        try? FileManager.default.removeItem(at: destination)
        try FileManager.default.moveItem(at: file, to: destination)
        return http
    }
}
