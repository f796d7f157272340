import CloudCore
import CloudRuntime
import Hummingbird
import Logging

/// One log line per request with its id, method, path, status and duration, also counted in the console's
/// request statistics. The query string is left out: it carries `ckAPIToken`, `ckWebAuthToken` and URL
/// signatures, which must never reach a log.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let statistics: RequestStatistics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            self.statistics.record(
                path: request.uri.path, status: Int((error as? any HTTPResponseError)?.status.code ?? 500),
                microseconds: (ContinuousClock.now - start).microseconds)
            throw error
        }
        let elapsed = ContinuousClock.now - start
        self.statistics.record(path: request.uri.path, status: response.status.code, microseconds: elapsed.microseconds)
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
                "ms": "\(elapsed.milliseconds)",
            ])
        return response
    }
}
