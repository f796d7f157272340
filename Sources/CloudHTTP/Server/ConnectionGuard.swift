import CloudCore
import CloudRuntime
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Metrics
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The server's open connections, and how many it keeps at most (docs/RELIABILITY.md, "Connections"). Every
/// connection holds a file descriptor and some memory whatever it sends; without a bound, a client opening a thousand
/// and sending nothing took the process's last descriptors, and PostgreSQL connections and asset files with them.
final class OpenConnectionCount: Sendable {
    let maximum: Int
    private let open = Atomic<Int>(0)
    private let gauge = Gauge(label: "stadiumcloud_open_connections")
    private let placeFreed: StateSignal

    init(maximum: Int, placeFreed: StateSignal) { (self.maximum, self.placeFreed) = (maximum, placeFreed) }

    /// Counts a new connection; false when it is one too many.
    func admit() -> Bool {
        let now = self.open.wrappingAdd(1, ordering: .relaxed).newValue
        self.gauge.record(now)
        return now <= self.maximum
    }

    func release() {
        let now = self.open.wrappingSubtract(1, ordering: .relaxed).newValue
        self.gauge.record(now)
        if now < self.maximum { self.placeFreed.changed() }
    }
}

/// Guards one connection: past the maximum it is answered 503 TRY_AGAIN_LATER at once and closed; a connection whose
/// first request head has not arrived within `headTimeout` is closed (the idle timeout, longer, keeps keep-alive
/// connections between requests). Both cost a client nothing it could have used, and nobody else a descriptor.
final class ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    let connections: OpenConnectionCount
    let headTimeout: TimeAmount
    private var counted = false
    private var refused = false
    private var headDeadline: Scheduled<Void>?
    /// Completed when the client closes its side (or the connection closes): what `endingWhenTheClientLeaves` waits on.
    private var departure: EventLoopPromise<Void>?

    init(connections: OpenConnectionCount, headTimeout: TimeAmount) {
        (self.connections, self.headTimeout) = (connections, headTimeout)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.departure = context.eventLoop.makePromise()
        self.counted = true
        self.refused = !self.connections.admit()
        if context.channel.isActive { self.start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        self.start(context)
        context.fireChannelActive()
    }

    /// Once the connection can be written to: the refusal, or the deadline for the first request head.
    private func start(_ context: ChannelHandlerContext) {
        guard self.refused else {
            if self.headDeadline == nil {
                self.headDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: self.headTimeout) { context.close(promise: nil) }
            }
            return
        }
        let error = CloudError(.tryAgainLater, "the server has as many connections open as it keeps; try again shortly", retryAfter: 1)
        var response = HTTPResponse(status: .serviceUnavailable)
        response.headerFields = [.contentType: "application/json; charset=UTF-8", .retryAfter: "1", .connection: "close"]
        let body = JSONWriter.encode(["serverErrorCode": .string(error.code.rawValue), "reason": .string(error.reason), "retryAfter": .int(1)])
        context.write(self.wrapOutboundOut(.head(response)), promise: nil)
        context.write(self.wrapOutboundOut(.body(context.channel.allocator.buffer(string: body))), promise: nil)
        // Only the output is closed: closing a socket with the request still unread in it sends a reset, and the client
        // may lose the answer. The client's own close (or two seconds) closes the rest.
        context.writeAndFlush(self.wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
            context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) { context.close(promise: nil) }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.departure?.succeed()
        self.headDeadline?.cancel()
        if self.counted { self.connections.release() }
        self.counted = false
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            self.departure?.succeed()
            if self.refused { return context.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.departure?.succeed()
        context.fireChannelInactive()
    }

    /// When the client of `channel` leaves; nil on a channel without a guard (a router test's).
    static func departure(of channel: any Channel) async throws -> EventLoopFuture<Void>? {
        try await channel.eventLoop.submit {
            try? channel.pipeline.syncOperations.handler(type: ConnectionGuard.self).departure?.futureResult
        }.get()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.refused else { return }
        if case .head = self.unwrapInboundIn(data) {
            self.headDeadline?.cancel()
            self.headDeadline = nil
        }
        context.fireChannelRead(data)
    }
}

/// The context of every request: Hummingbird's, and the connection the request came on, so that a long poll can end
/// when its client goes away (`endingWhenTheClientLeaves`).
public struct CloudRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}

/// Runs a long poll (`changes/wait`, the web courier) so that it ends the moment its client goes away, freeing its
/// waiter and its place under the per-account limit, instead of at its timeout: a device that reconnects was THROTTLED
/// by its own abandoned polls for up to a minute. The poll is cancelled; the answer nobody reads is counted as 499.
func endingWhenTheClientLeaves(_ context: CloudRequestContext, _ poll: @escaping @Sendable () async throws -> Response) async throws -> Response {
    guard let departure = try await ConnectionGuard.departure(of: context.channel) else { return try await poll() }
    let task = Task { try await poll() }
    departure.whenComplete { _ in task.cancel() }
    return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
}
