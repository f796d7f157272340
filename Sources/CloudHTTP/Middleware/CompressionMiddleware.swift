import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Compresses JSON answers with gzip when the client accepts it (`Accept-Encoding: gzip`): a first sync's pages
/// shrink about tenfold. Streamed as the body is written, never buffered whole; small answers (under 1 KiB)
/// and non-JSON bodies (asset bytes, already compressed) go out as they are.
struct CompressionMiddleware<Context: RequestContext>: RouterMiddleware {
    static var minimumSize: Int { 1024 }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        guard Self.acceptsGzip(request.headers[.acceptEncoding]), response.headers[.contentEncoding] == nil,
            response.headers[.contentType]?.hasPrefix("application/json") ?? false, (response.body.contentLength ?? .max) >= Self.minimumSize
        else { return response }
        let body = response.body
        response.headers[.contentEncoding] = "gzip"
        response.headers[.contentLength] = nil
        response.headers.append(HTTPField(name: .vary, value: "Accept-Encoding"))
        response.body = ResponseBody { writer in try await body.write(GzipBodyWriter(inner: writer)) }
        return response
    }

    /// Whether an `Accept-Encoding` value admits gzip (`gzip`, `gzip;q=0.5`, `*`; not `gzip;q=0`).
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { item in
            let parts = item.split(separator: ";").map { $0.filter { !$0.isWhitespace }.lowercased() }
            guard let coding = parts.first, coding == "gzip" || coding == "*" else { return false }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
    }
}

/// Writes the gzip form of what is written to it into another body writer.
struct GzipBodyWriter: ResponseBodyWriter {
    var inner: any ResponseBodyWriter
    let deflater = Deflater()

    mutating func write(_ buffer: ByteBuffer) async throws {
        let compressed = try self.deflater.deflate(buffer, finish: false)
        if compressed.readableBytes > 0 { try await self.inner.write(compressed) }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        try await self.inner.write(try self.deflater.deflate(ByteBuffer(), finish: true))
        try await self.inner.finish(trailingHeaders)
    }
}
