import CloudCore
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// Answers every failure in CloudKit's error shape `{uuid, serverErrorCode, reason, retryAfter?, redirectURL?}` and
/// tags every response with the request id. Unexpected errors are logged and answered as a generic 500.
struct CloudErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as CloudError {
            if error.code == .internalError { context.logger.error("internal error: \(error.reason)") }
            if error.code == .tryAgainLater { context.logger.warning("TRY_AGAIN_LATER: \(error.reason)") }
            response = Self.response(for: error, requestID: context.id)
        } catch let error as HTTPError {
            response = Self.response(for: Self.translate(error), requestID: context.id)
        } catch is CancellationError {
            // The client went away during a long poll (`endingWhenTheClientLeaves`): nobody reads this answer, and it
            // is counted as the client's, with nginx's "client closed request".
            response = Response(status: .init(code: 499, reasonPhrase: "Client Closed Request"))
        } catch is HTTPParserError {
            // The client went away (or sent what HTTP cannot parse) mid-request: its doing, not a server failure, so it
            // is logged and counted as a client's error. An upload cut off this way resumes from what HEAD reports.
            response = Self.response(
                for: .badRequest("the request ended before its body did (the connection was closed, or the body is not valid HTTP)"),
                requestID: context.id)
        } catch let error as RequestBodyTooSlow {
            // 408, which says what happened; BAD_REQUEST, CloudKit's code for a request the client must change. The
            // connection closes after it: the rest of the body is not read.
            response = Self.response(for: .badRequest(error.reason), requestID: context.id, status: .requestTimeout)
            response.headers[.connection] = "close"
        } catch is NIOTooManyBytesError {
            response = Self.response(
                for: .badRequest("the request body is larger than this endpoint accepts; split the request"), requestID: context.id)
        } catch {
            // Never show database or other internal text to the client: log it with the request id.
            context.logger.error("unexpected error: \(String(reflecting: error))")
            response = Self.response(for: CloudError(.internalError, "internal server error; the request id is \(context.id)"), requestID: context.id)
        }
        response.headers[.requestUUID] = context.id
        return response
    }

    static func translate(_ error: HTTPError) -> CloudError {
        switch error.status.code {
        case 404: CloudError.notFound("no such endpoint")
        case 405: CloudError.badRequest("this endpoint does not accept that HTTP method")
        case 413: CloudError.badRequest("the request body is too large; split the request")
        case 400..<500: CloudError.badRequest(error.body ?? "bad request")
        default: CloudError(.internalError, "internal server error")
        }
    }

    /// The CloudKit error body of `error`, with the status CloudKit gives its code unless `status` says otherwise.
    static func response(for error: CloudError, requestID: String, status: HTTPResponse.Status? = nil) -> Response {
        var json = JSONWriter(capacity: 256)
        json.object { json in
            json.key("uuid"); json.string(requestID)
            json.key("serverErrorCode"); json.string(error.code.rawValue)
            json.key("reason"); json.string(error.reason)
            if let retryAfter = error.retryAfter { json.key("retryAfter"); json.int(Int64(retryAfter)) }
            if let redirectURL = error.redirectURL { json.key("redirectURL"); json.string(redirectURL) }
        }
        var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
        if let retryAfter = error.retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(
            status: status ?? HTTPResponse.Status(code: error.code.httpStatus), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json.bytes)))
    }
}

extension HTTPField.Name {
    static let requestUUID = Self("X-Apple-Request-UUID")!
    static let webAuthToken = Self("X-Apple-CloudKit-Web-Auth-Token")!
    /// Extension: the device a change comes from, answered as `deviceID` in `created`/`modified`.
    static let deviceID = Self("X-StadiumCloud-Device-ID")!
    /// Extension: makes a `records/modify` safe to retry (docs/RELIABILITY.md).
    static let idempotencyKey = Self("Idempotency-Key")!
}
