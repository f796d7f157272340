import HTTPTypes
import Hummingbird

/// Cross-origin access for web apps (CloudKit JS in a page) on the origins the operator allows (`serve --web-origin`;
/// docs/AUTH.md, "Web apps"). A request from an allowed origin gets its origin echoed back with `Vary: Origin`, and the
/// headers a page must read exposed: the rotated web auth token, the request id, `Retry-After` and `Upload-Offset`. A
/// preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin is answered here, for every path,
/// before routing. Any other origin gets no CORS header at all, so its pages cannot read an answer. No credentials
/// (cookies) are allowed: every credential CloudKit JS sends is in the URL or a header, chosen by the page.
struct CORSMiddleware<Context: RequestContext>: RouterMiddleware {
    let origins: Set<String>

    static var exposed: String { "X-Apple-CloudKit-Web-Auth-Token, X-Apple-Request-UUID, Retry-After, Upload-Offset" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin], self.origins.contains(origin) else {
            // The answer depends on the origin: a shared cache must not give this one (without CORS) to an allowed page.
            var response = try await next(request, context)
            response.headers.append(HTTPField(name: .vary, value: "Origin"))
            return response
        }
        if request.method == .options, request.headers[.accessControlRequestMethod] != nil {
            var headers: HTTPFields = [
                .accessControlAllowOrigin: origin, .vary: "Origin", .accessControlAllowMethods: "GET, POST, HEAD",
                .accessControlMaxAge: "600",
            ]
            // The page's own headers (Content-Type, the signature headers, Idempotency-Key…): asked for by name.
            if let asked = request.headers[.accessControlRequestHeaders] { headers[.accessControlAllowHeaders] = asked }
            return Response(status: .noContent, headers: headers)
        }
        var response = try await next(request, context)
        response.headers[.accessControlAllowOrigin] = origin
        response.headers.append(HTTPField(name: .vary, value: "Origin"))  // beside compression's Accept-Encoding
        response.headers[.accessControlExposeHeaders] = Self.exposed
        return response
    }
}
