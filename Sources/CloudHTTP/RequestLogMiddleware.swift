import CloudCore
import Hummingbird
import Logging

/// One log line per request with its id, method, path, status and duration. The query string is left out:
/// it carries `ckAPIToken`, `ckWebAuthToken` and URL signatures, which must never reach a log.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
                "ms": "\(elapsed.milliseconds)",
            ])
        return response
    }
}
