import CloudCore
import CloudRuntime
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Metrics
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The server's open connections, and how many it keeps at most, in all and from one client (docs/RELIABILITY.md,
/// "Connections"). Every connection holds a file descriptor and some memory whatever it sends; without a bound, a client
/// opening a thousand and sending nothing took the process's last descriptors, and PostgreSQL connections and asset
/// files with them; without one per client, one host holding every place locked everyone else out.
final class OpenConnectionCount: Sendable {
    let maximum: Int
    let limits: ConnectionLimits
    private let open = Atomic<Int>(0)
    private let perClient = Mutex<[String: Int]>([:])
    private let gauge = Gauge(label: "stadiumcloud_open_connections")
    private let placeFreed: StateSignal

    /// Why a connection was refused, or nil.
    enum Refusal { case full, clientFull }

    init(limits: ConnectionLimits, placeFreed: StateSignal) {
        (self.maximum, self.limits, self.placeFreed) = (limits.maximum, limits, placeFreed)
    }

    /// Counts a new connection from `client` (`client(of:)`; nil: not counted per client), or says why it is refused. A
    /// refused connection is not counted: it is answered and gone within two seconds, and counting it let the
    /// refusals of one address's retries fill the places of everyone else.
    func admit(from client: String?) -> Refusal? {
        if let client {
            let withinShare = self.perClient.withLock { counts in
                guard counts[client, default: 0] < self.limits.maximumPerAddress else { return false }
                counts[client, default: 0] += 1
                return true
            }
            guard withinShare else { return .clientFull }
        }
        let now = self.open.wrappingAdd(1, ordering: .relaxed).newValue
        guard now <= self.maximum else {
            self.open.wrappingSubtract(1, ordering: .relaxed)
            if let client { self.releaseShare(of: client) }
            return .full
        }
        self.gauge.record(now)
        return nil
    }

    /// An admitted connection closed.
    func release(from client: String?) {
        if let client { self.releaseShare(of: client) }
        let now = self.open.wrappingSubtract(1, ordering: .relaxed).newValue
        self.gauge.record(now)
        if now < self.maximum { self.placeFreed.changed() }
    }

    private func releaseShare(of client: String) {
        self.perClient.withLock { counts in
            counts[client, default: 1] -= 1
            if counts[client] == 0 { counts[client] = nil }
        }
    }

    /// Whom a connection from `address` counts against: its IPv4 address, or its IPv6 /64 (one host is usually given a
    /// whole /64); nil for an address the cap leaves alone (`ConnectionLimits.uncappedAddresses`) or a Unix socket's.
    func client(of address: SocketAddress?) -> String? {
        let client: String
        switch address {
        case .v4?:
            guard let text = address?.ipAddress else { return nil }
            client = text
        case .v6(let v6)?:
            // sockaddr_in6: family, port, flow information, then the address's 16 bytes.
            let bytes = withUnsafeBytes(of: v6.address) { Array($0[8..<24]) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                client = bytes[12...].map(String.init).joined(separator: ".")
            } else if bytes[0..<15].allSatisfy({ $0 == 0 }), bytes[15] == 1 {
                client = "::1"
            } else {
                client =
                    stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
                    + "::/64"
            }
        default:
            return nil
        }
        return self.limits.maximumPerAddress == 0 || self.limits.uncappedAddresses.contains(client) ? nil : client
    }
}

/// A request body that came too slowly (`BodyPace`): the request's handler meets it reading the body, and the client
/// is answered 408 (`CloudErrorMiddleware`).
struct RequestBodyTooSlow: Error {
    let reason: String
}

/// Guards one connection: past the maximum (in all, or from its client) it is answered 503 at once and closed; a
/// connection whose first request head has not arrived within `headTimeout` is closed (the idle timeout, longer, keeps
/// keep-alive connections between requests); a request body that comes slower than its `BodyPace` ends in an error the
/// request meets reading it. Each costs a client nothing it could have used, and nobody else a descriptor.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let connections: OpenConnectionCount
    let headTimeout: TimeAmount
    private var counted = false
    private var client: String?
    private var refusal: OpenConnectionCount.Refusal?
    private var headDeadline: Scheduled<Void>?
    /// The request body being read, and when its pace is next checked.
    private var body: BodyClock?
    private var bodyCheck: Scheduled<Void>?
    /// Set once a body came too slowly: nothing more is read from the connection, which closes.
    private var bodyTooSlow = false
    /// Completed when the client closes its side (or the connection closes): what `endingWhenTheClientLeaves` waits on.
    private var departure: EventLoopPromise<Void>?

    init(connections: OpenConnectionCount, headTimeout: TimeAmount) {
        (self.connections, self.headTimeout) = (connections, headTimeout)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.departure = context.eventLoop.makePromise()
        self.client = self.connections.client(of: context.channel.remoteAddress)
        self.refusal = self.connections.admit(from: self.client)
        self.counted = self.refusal == nil
        if context.channel.isActive { self.start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        self.start(context)
        context.fireChannelActive()
    }

    /// Once the connection can be written to: the refusal, or the deadline for the first request head.
    private func start(_ context: ChannelHandlerContext) {
        guard let refusal = self.refusal else {
            if self.headDeadline == nil {
                self.headDeadline = context.eventLoop.assumeIsolated().scheduleTask(in: self.headTimeout) { context.close(promise: nil) }
            }
            return
        }
        let error =
            switch refusal {
            case .full: CloudError(.tryAgainLater, "the server has as many connections open as it keeps; try again shortly", retryAfter: 1)
            case .clientFull:
                CloudError(
                    .throttled,
                    "this address has \(self.connections.limits.maximumPerAddress) connections open, as many as one client may; close some",
                    retryAfter: 1)
            }
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
        self.bodyCheck?.cancel()
        if self.counted { self.connections.release(from: self.client) }
        self.counted = false
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            self.departure?.succeed()
            if self.refusal != nil { return context.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.departure?.succeed()
        context.fireChannelInactive()
    }

    /// When the client of `channel` leaves. A connection reset before the request gets here is closed already and its
    /// guard gone with its handlers: then the channel's close, which has come. A router test's channel has no guard and
    /// never closes.
    static func departure(of channel: any Channel) async throws -> EventLoopFuture<Void> {
        try await channel.eventLoop.submit {
            (try? channel.pipeline.syncOperations.handler(type: ConnectionGuard.self).departure?.futureResult) ?? channel.closeFuture
        }.get()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard self.refusal == nil, !self.bodyTooSlow else { return }
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.headDeadline?.cancel()
            self.headDeadline = nil
            self.body = BodyClock(pace: Self.pace(forPath: head.path, self.connections.limits), now: .now())
        case .body(let bytes):
            self.body?.received(bytes.readableBytes, now: .now())
        case .end:
            self.body = nil
            self.bodyCheck?.cancel()
            self.bodyCheck = nil
        }
        context.fireChannelRead(data)
    }

    /// Paths whose bodies are uploads (`ConnectionLimits.uploadBody`): photo bytes and the console's dataset.
    static let uploadPaths = ["/assets/upload/", "/console/import/upload"]

    /// The pace a request's body is held to: an upload's own, else the one of every other body.
    static func pace(forPath path: String?, _ limits: ConnectionLimits) -> BodyPace {
        Self.uploadPaths.contains { path?.hasPrefix($0) == true } ? limits.uploadBody : limits.body
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.body != nil {
            // Bodies of one read (most requests') are done before any check is due: only a body still coming is checked.
            self.body?.serverStoppedReading(now: .now())
            if self.bodyCheck == nil { self.scheduleBodyCheck(context) }
        }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        self.body?.serverReads(now: .now())
        context.read()
    }

    private func scheduleBodyCheck(_ context: ChannelHandlerContext) {
        guard let body = self.body else { return }
        self.bodyCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: body.nextCheck) { self.checkBody(context) }
    }

    private func checkBody(_ context: ChannelHandlerContext) {
        self.bodyCheck = nil
        guard var body = self.body else { return }
        if let reason = body.tooSlow(now: .now()) {
            self.body = nil
            self.bodyTooSlow = true
            context.fireErrorCaught(RequestBodyTooSlow(reason: reason))
            // The request's handler answers 408 and the connection closes; one that never reads its body answers
            // nothing, and the connection is closed anyway.
            context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) { context.close(promise: nil) }
            return
        }
        self.body = body
        self.scheduleBodyCheck(context)
    }
}

/// The pace of one request body (`BodyPace`): a deadline for the whole body, and one for its next bytes, which each byte
/// moves `1 / minimumBytesPerSecond` seconds on, never more than `slack` ahead. While the server itself does not read (the
/// request's handler has not taken what came), both stand still: the client is not blamed for the server's pace.
struct BodyClock {
    let pace: BodyPace
    private(set) var wholeBody: NIODeadline
    private(set) var nextBytes: NIODeadline
    private var notReadingSince: NIODeadline?

    init(pace: BodyPace, now: NIODeadline) {
        self.pace = pace
        self.wholeBody = now + .milliseconds(pace.deadline.milliseconds)
        self.nextBytes = now + .milliseconds(pace.slack.milliseconds)
    }

    var nextCheck: NIODeadline { min(self.wholeBody, self.nextBytes) }

    mutating func received(_ count: Int, now: NIODeadline) {
        guard self.pace.minimumBytesPerSecond > 0 else { return }
        let earned = TimeAmount.nanoseconds(Int64(count) * 1_000_000_000 / Int64(self.pace.minimumBytesPerSecond))
        self.nextBytes = min(self.nextBytes + earned, now + .milliseconds(self.pace.slack.milliseconds))
    }

    mutating func serverStoppedReading(now: NIODeadline) {
        if self.notReadingSince == nil { self.notReadingSince = now }
    }

    mutating func serverReads(now: NIODeadline) {
        guard let since = self.notReadingSince else { return }
        self.notReadingSince = nil
        self.wholeBody = self.wholeBody + (now - since)
        self.nextBytes = self.nextBytes + (now - since)
    }

    /// Why the body is too slow at `now`, or nil (its deadlines moved on by any time the server was not reading).
    mutating func tooSlow(now: NIODeadline) -> String? {
        if self.notReadingSince != nil {
            self.serverReads(now: now)
            self.notReadingSince = now
            return nil
        }
        if now >= self.wholeBody {
            return "the request body took longer than \(self.pace.deadline.components.seconds) s; send it faster or in smaller requests"
        }
        if self.pace.minimumBytesPerSecond > 0, now >= self.nextBytes {
            return "the request body came slower than \(self.pace.minimumBytesPerSecond) bytes a second"
        }
        return nil
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
    let departure = try await ConnectionGuard.departure(of: context.channel)
    let task = Task { try await poll() }
    departure.whenComplete { _ in task.cancel() }
    return try await withTaskCancellationHandler {
        try await task.value
    } onCancel: {
        task.cancel()
    }
}
