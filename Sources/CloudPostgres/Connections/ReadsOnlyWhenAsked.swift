import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// Lets what the socket delivers through to PostgresNIO only when PostgresNIO asked to read; anything else is held
/// until it asks, and dropped if the connection closes first.
///
/// Why: when PostgreSQL closes a connection (a restart, a failover, a terminated backend), NIO reads what is left on
/// the socket and fires `channelRead` and `channelReadComplete` whether a read was asked for or not. PostgresNIO 1.33
/// stops the process when that happens while a query's rows wait for their reader (a precondition in
/// `RowStreamStateMachine.channelReadComplete`, the one AsyncHTTPClient removed from its own state machine in
/// swift-server/async-http-client#450). Held back, those bytes never reach it: the connection goes inactive and the
/// query fails as on any lost connection.
final class ReadsOnlyWhenAsked: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A read was asked for and none of its bytes have come (NIO's `readPending`: each chunk read clears it).
    private var asked = false
    /// Between the first chunk of an asked-for read and its `channelReadComplete`.
    private var reading = false
    /// What came unasked, for the next read.
    private var held: [ByteBuffer] = []
    private var heldComplete = false

    func read(context: ChannelHandlerContext) {
        guard self.held.isEmpty, !self.heldComplete else {
            let held = self.held
            (self.held, self.heldComplete) = ([], false)
            for chunk in held { context.fireChannelRead(self.wrapInboundOut(chunk)) }
            context.fireChannelReadComplete()
            return
        }
        self.asked = true
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard self.asked || self.reading else {
            self.held.append(self.unwrapInboundIn(data))
            return
        }
        (self.asked, self.reading) = (false, true)
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard self.asked || self.reading else {
            self.heldComplete = true
            return
        }
        self.reading = false
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        (self.held, self.heldComplete) = ([], false)
        context.fireChannelInactive()
    }
}

extension PostgresConnection {
    /// Connects as `configuration` says, with `ReadsOnlyWhenAsked` between the socket and PostgresNIO.
    static func connectReadingOnlyWhenAsked(
        host: String, port: Int, configuration: PostgresConnection.Configuration, id: Int, logger: Logger
    ) async throws -> PostgresConnection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(configuration.options.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(ReadsOnlyWhenAsked()) }
            }
            .connect(host: host, port: port).get()
        var established = PostgresConnection.Configuration(
            establishedChannel: channel, username: configuration.username, password: configuration.password,
            database: configuration.database)
        established.options = configuration.options
        do {
            return try await PostgresConnection.connect(on: channel.eventLoop, configuration: established, id: id, logger: logger).get()
        } catch {
            try? await channel.close()
            throw error
        }
    }
}
