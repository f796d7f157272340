import CloudCore
import Synchronization

/// Wakes the requests that wait for a database to change (`changes/wait`, the web courier): in memory, one per
/// process; `ChangeBroadcast` (CloudPostgres) carries changes between processes. A waiter registers before it
/// reads the database's head and is signalled by any change after that, so a change committed between the read
/// and the wait still wakes it. A wake is a hint: the waiter reads again with its token.
public final class ChangeFeed: Sendable {
    /// Why waiting was refused: too many waiters in this process or for one account (503 THROTTLED).
    public struct Limits: Sendable {
        public var waiters: Int
        public var waitersPerAccount: Int

        public init(waiters: Int = 20_000, waitersPerAccount: Int = 16) {
            self.waiters = waiters
            self.waitersPerAccount = waitersPerAccount
        }
    }

    private enum Phase {
        /// Registered, not yet waiting; `woken` remembers a wake (true: a change, false: the timeout) until it waits.
        case registered(woken: Bool?)
        case waiting(CheckedContinuation<Bool, Never>)
    }

    private struct Waiter {
        var databases: [Int64]
        var account: Int64?
        var phase: Phase
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var byDatabase: [Int64: Set<UInt64>] = [:]
        var perAccount: [Int64: Int] = [:]
        var nextID: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())
    public let limits: Limits

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Waiters registered now (for `/metrics` and tests).
    public var waiting: Int { self.state.withLock { $0.waiters.count } }
    /// Changed whenever `waiting` changes.
    public let waitingChanges = StateSignal()

    /// Registers a waiter for changes to any of `databases`; THROTTLED past the limits.
    public func register(databases: [Int64], account: Int64?) throws -> ChangeWaiter {
        let id = try self.state.withLock { state throws(CloudError) -> UInt64 in
            guard state.waiters.count < self.limits.waiters else {
                throw CloudError(.throttled, "this server holds \(self.limits.waiters) waiting requests already; poll instead", retryAfter: 5)
            }
            if let account {
                guard state.perAccount[account, default: 0] < self.limits.waitersPerAccount else {
                    throw CloudError(
                        .throttled, "an account may hold at most \(self.limits.waitersPerAccount) waiting requests at once", retryAfter: 5)
                }
                state.perAccount[account, default: 0] += 1
            }
            state.nextID += 1
            // A closing server answers at once (unchanged), so the client asks again, of a server that stays.
            state.waiters[state.nextID] = Waiter(databases: databases, account: account, phase: .registered(woken: state.closed ? false : nil))
            for database in databases { state.byDatabase[database, default: []].insert(state.nextID) }
            return state.nextID
        }
        self.waitingChanges.changed()
        return ChangeWaiter(feed: self, id: id)
    }

    /// Wakes every waiter on these databases. Called after the change committed.
    public func changed(_ databases: some Sequence<Int64>) {
        let ids = self.state.withLock { state in Set(databases.flatMap { state.byDatabase[$0] ?? [] }) }
        for id in ids { self.wake(id, changed: true) }
    }

    /// Wakes every waiter: after the listening connection was lost, a change may have gone unheard.
    public func wakeAll() {
        for id in self.state.withLock({ Array($0.waiters.keys) }) { self.wake(id, changed: true) }
    }

    /// Ends every wait now with "nothing changed": the database's history forked, and the clients ask again.
    public func endAll() {
        for id in self.state.withLock({ Array($0.waiters.keys) }) { self.wake(id, changed: false) }
    }

    /// The server is shutting down: every waiter answers now, and later ones at once.
    public func close() {
        let ids = self.state.withLock { state in
            state.closed = true
            return Array(state.waiters.keys)
        }
        for id in ids { self.wake(id, changed: false) }
    }

    fileprivate func wake(_ id: UInt64, changed: Bool) {
        let continuation = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiters[id] else { return nil }
            switch waiter.phase {
            case .registered(let woken):
                if woken == nil { state.waiters[id]?.phase = .registered(woken: changed) }
                return nil
            case .waiting(let continuation):
                state.waiters[id]?.phase = .registered(woken: changed)
                return continuation
            }
        }
        continuation?.resume(returning: changed)
    }

    fileprivate func park(_ id: UInt64, _ continuation: CheckedContinuation<Bool, Never>) {
        let woken = self.state.withLock { state -> Bool? in
            guard let waiter = state.waiters[id] else { return false }
            if case .registered(let woken?) = waiter.phase { return woken }
            state.waiters[id]?.phase = .waiting(continuation)
            return nil
        }
        if let woken { continuation.resume(returning: woken) }
    }

    fileprivate func remove(_ id: UInt64) {
        let continuation = self.state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let waiter = state.waiters.removeValue(forKey: id) else { return nil }
            for database in waiter.databases {
                state.byDatabase[database]?.remove(id)
                if state.byDatabase[database]?.isEmpty == true { state.byDatabase[database] = nil }
            }
            if let account = waiter.account {
                state.perAccount[account, default: 1] -= 1
                if state.perAccount[account] == 0 { state.perAccount[account] = nil }
            }
            if case .waiting(let continuation) = waiter.phase { return continuation }
            return nil
        }
        self.waitingChanges.changed()
        continuation?.resume(returning: false)
    }
}

/// One registered waiter of a `ChangeFeed`. Wait once, or end it; either way it leaves the feed.
public struct ChangeWaiter: Sendable {
    let feed: ChangeFeed
    let id: UInt64

    /// Waits for a change (true) or for `timeout` on `clock` (false), then leaves the feed. A change signalled since
    /// registration answers at once. Cancelling the task ends the wait with false.
    public func wait(timeout: Duration, clock: ServerClock) async -> Bool {
        let (feed, id) = (self.feed, self.id)
        let timer = Task {
            try await clock.sleep(for: timeout)
            feed.wake(id, changed: false)
        }
        defer {
            timer.cancel()
            feed.remove(id)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { feed.park(id, $0) }
        } onCancel: {
            feed.wake(id, changed: false)
        }
    }

    /// Leaves the feed without waiting (the answer was ready at once).
    public func end() { self.feed.remove(self.id) }
}
