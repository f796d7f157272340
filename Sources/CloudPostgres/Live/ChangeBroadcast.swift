import CloudCore
import CloudRuntime
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Tells every server process which databases changed, so each can wake its own waiters (`ChangeFeed`).
///
/// After a write commits, the writing process wakes its waiters at once and sends one `NOTIFY` for every process,
/// outside the write's transaction (a `NOTIFY` inside it would take PostgreSQL's global notify lock at commit)
/// and coalesced: while one is being sent, the databases changed meanwhile wait for the next, which names them
/// all. Each process listens on one connection of its own (`run`, a service). When that connection is lost it
/// reconnects, listens again and then wakes every waiter, since a change may have gone unheard in between; waiters
/// re-check with their tokens, so a wake-up is never lost, only sometimes spurious. A process that knows it is the
/// only listener sends nothing (`watchPeers`).
public final class ChangeBroadcast: Service, Sendable {
    public static let channel = "stadiumcloud_changes"
    /// PostgreSQL refuses payloads of 8,000 bytes or more.
    static let maxPayloadBytes = 7_900

    public let feed: ChangeFeed
    let client: PostgresPool
    let logger: Logger
    /// Tells this process's notifications from the others' (it has woken its own waiters already).
    let origin = String(UInt64.random(in: 1...UInt64.max), radix: 36)
    private let sending = Mutex<(pending: Set<Int64>, task: Task<Void, Never>?)>(([], nil))
    private let listens = Atomic<Int>(0)
    /// Whether this process listens, and how many others do (-1: not counted yet): with none, no `NOTIFY` is sent.
    /// A process that does not listen (a command such as `import`, or a server whose listener is down) always sends.
    private let peers = Mutex<(listening: Bool, others: Int)>((false, -1))

    init(client: PostgresPool, feed: ChangeFeed, logger: Logger) {
        self.client = client
        self.feed = feed
        self.logger = logger
    }

    private let sent = Atomic<Int>(0)

    /// How many times the listening connection has started listening (tests wait for a reconnect with it).
    public var listenCount: Int { self.listens.load(ordering: .relaxed) }
    /// The other processes listening, as last counted or heard (-1 before the first count).
    public var peerCount: Int { self.peers.withLock { $0.others } }
    /// Notifications sent so far.
    public var notificationsSent: Int { self.sent.load(ordering: .relaxed) }
    /// Changed whenever `listenCount`, `peerCount` or `notificationsSent` changes.
    public let countChanges = StateSignal()

    /// A write to these databases committed: wakes this process's waiters and notifies the other processes.
    public func committed(_ databases: some Sequence<Int64>) {
        let databases = Set(databases)
        guard !databases.isEmpty else { return }
        self.feed.changed(databases)
        self.sending.withLock { state in
            state.pending.formUnion(databases)
            guard state.task == nil else { return }
            state.task = Task { await self.sendPending() }
        }
    }

    /// Returns once every notification asked for so far is sent (a command that imports and exits).
    public func flush() async {
        while let task = self.sending.withLock({ $0.task }) { await task.value }
    }

    private func sendPending() async {
        while true {
            let databases = self.sending.withLock { state -> Set<Int64> in
                defer { state.pending = [] }
                if state.pending.isEmpty { state.task = nil }
                return state.pending
            }
            guard !databases.isEmpty else { return }
            guard self.peers.withLock({ !$0.listening || $0.others != 0 }) else { continue }
            for payload in Self.payloads(origin: self.origin, databases: databases) {
                do {
                    try await self.client.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: self.logger)
                    self.sent.add(1, ordering: .relaxed)
                    self.countChanges.changed()
                } catch {
                    // Other processes' waiters then wake at their timeout and re-check: late, not lost.
                    self.logger.warning("could not notify other processes of changes", metadata: ["error": "\(String(reflecting: error))"])
                }
            }
        }
    }

    /// `origin id,id,…`, split so that each payload stays under PostgreSQL's limit.
    static func payloads(origin: String, databases: Set<Int64>) -> [String] {
        var payloads: [String] = []
        var current = origin + " "
        for id in databases.sorted() {
            let text = String(id)
            if current.utf8.count + text.utf8.count + 1 > Self.maxPayloadBytes {
                payloads.append(current)
                current = origin + " "
            }
            current += (current.hasSuffix(" ") ? "" : ",") + text
        }
        payloads.append(current)
        return payloads
    }

    /// The databases a payload names (none: another process announcing itself), or nil when this process sent it.
    func databases(in payload: String) -> [Int64]? {
        let parts = payload.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] != self.origin else { return nil }
        return parts[1].split(separator: ",").compactMap { Int64($0) }
    }

    /// Listens until cancelled or, in a `ServiceGroup`, until graceful shutdown; reconnects after a lost connection.
    /// At shutdown every waiter is answered, so that in-flight long polls do not hold the process up. The listening
    /// runs apart and is cancelled, not awaited: nothing it may be waiting for (a connection being made, a LISTEN
    /// being answered) can hold up the shutdown either.
    public func run() async throws {
        let listening = Task { await self.listen() }
        try? await gracefulShutdown()
        listening.cancel()
        self.feed.close()
    }

    func listen() async {
        var backoff = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: self.client.url.connectionConfiguration, id: 1, logger: self.logger)
                defer { Task { try? await connection.close() } }
                // How the other processes count this one as a listener (`watchPeers`).
                try await connection.query("SELECT set_config('application_name', \(Self.listenerName), false)", logger: self.logger)
                try await connection.listen(on: Self.channel) { notifications in
                    self.listens.add(1, ordering: .relaxed)
                    self.peers.withLock { $0 = (listening: true, others: -1) }
                    self.countChanges.changed()
                    backoff = .milliseconds(100)
                    // Whatever committed while nobody listened is caught up by waking everyone.
                    self.feed.wakeAll()
                    // Whichever ends first ends the listening: the peer count's query every 2 s doubles as a
                    // heartbeat, so a connection that died without ending the notifications is noticed too (a test
                    // once waited forever for a listener whose backend had been terminated).
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { try await self.watchPeers(on: connection) }
                        group.addTask {
                            for try await notification in notifications {
                                guard let databases = self.databases(in: notification.payload) else { continue }
                                let firstHeard = self.peers.withLock { peers in
                                    guard peers.others < 1 else { return false }
                                    peers.others = 1
                                    return true
                                }
                                if firstHeard { self.countChanges.changed() }
                                self.feed.changed(databases)
                            }
                        }
                        defer { group.cancelAll() }
                        try await group.next()
                    }
                }
            } catch {
                if Task.isCancelled { return }
                self.logger.warning(
                    "the change listener lost PostgreSQL; reconnecting in \(backoff)", metadata: ["error": "\(String(reflecting: error))"])
            }
            self.peers.withLock { $0 = (listening: false, others: -1) }
            self.countChanges.changed()
            do { try await Task.sleep(for: backoff) } catch { return }
            backoff = min(backoff * 2, .seconds(5))
        }
    }

    static let listenerName = "stadiumcloud changes"

    /// Keeps count of the other processes listening, so that a lone process sends no `NOTIFY` (nobody would hear
    /// it, and it would cost each save a transaction). A new process announces itself with an empty notification,
    /// so the others start notifying at once, and wakes its waiters once more a second later for a change an
    /// older process committed before it heard the announcement. Then it recounts every 2 s from
    /// `pg_stat_activity` (listeners by application name), so a process that went away is no longer counted.
    func watchPeers(on connection: PostgresConnection) async throws {
        try await self.client.query("SELECT pg_notify(\(Self.channel), \(self.origin + " "))", logger: self.logger)
        var announced = false
        while true {
            var others = 0
            for try await count in try await connection.query(
                """
                SELECT count(*)::int FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = \(Self.listenerName) AND pid <> pg_backend_pid()
                """, logger: self.logger
            ).decode(Int.self) { others = count }
            self.peers.withLock { $0 = (listening: true, others: others) }
            self.countChanges.changed()
            try await Task.sleep(for: announced ? .seconds(2) : .seconds(1))
            if !announced { self.feed.wakeAll() }
            announced = true
        }
    }
}
