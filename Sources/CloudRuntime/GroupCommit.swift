import Synchronization

/// Lets concurrent writes of one key (a lane of databases) share one transaction, and so one commit: group commit.
/// Writes of one database are ordered by a lock held until the commit (docs/SYNC.md), so they would otherwise wait for
/// each other's commit, one WAL flush each; together they wait for one, and share the cost of a transaction.
///
/// The first write of a key while none of it runs goes at once, alone. Writes that arrive meanwhile wait; when it
/// ends, the first of them runs up to `groupLimit` of them together. If that fails, each runs alone (the failure may
/// be one write's own, or the leading request's deadline), so one write never fails another.
public final class GroupCommit<Key: Hashable & Sendable, Job: Sendable, Value: Sendable>: Sendable {
    /// Runs one job on its own.
    public typealias Alone = (Job) async throws -> Value
    /// Runs jobs together, all or nothing: one result per job, in order; throwing means nothing was written.
    public typealias Together = ([Job]) async throws -> [Result<Value, any Error>]

    private enum Turn: Sendable {
        /// Run these jobs (yours first) for the writers riding with you.
        case lead([Writer])
        /// Running together failed: run yours on your own.
        case alone
        case done(Result<Value, any Error>)
    }

    private struct Writer: Sendable {
        var id: Int
        var job: Job
        var continuation: CheckedContinuation<Turn, any Error>?
    }

    /// A key with a write under way: whose group holds it, and the writers that asked meanwhile (the next group's).
    private struct Lane {
        var leader: Int
        var waiting: [Writer] = []
    }

    private struct State {
        var lanes: [Key: Lane] = [:]
        var nextID = 0

        /// Hands the key from `leader` to the first `limit` writers waiting (the first of them leads), or frees it;
        /// nil when `leader` no longer holds it.
        mutating func handOff(_ key: Key, from leader: Int, limit: Int) -> [Writer]? {
            guard self.lanes[key]?.leader == leader else { return nil }
            let boarding = min(self.lanes[key]!.waiting.count, limit)
            guard boarding > 0 else {
                self.lanes[key] = nil
                return nil
            }
            let next = Array(self.lanes[key]!.waiting.prefix(boarding))
            self.lanes[key]!.waiting.removeFirst(boarding)
            self.lanes[key]!.leader = next[0].id
            return next
        }
    }

    private let state = Mutex(State())
    /// The most writes one transaction carries; the others wait for the next.
    public let groupLimit: Int

    public init(groupLimit: Int = 64) {
        precondition(groupLimit > 0)
        self.groupLimit = groupLimit
    }

    /// Keys with a write under way (tests: nothing is left behind).
    public var busyKeys: Int { self.state.withLock { $0.lanes.count } }

    /// Writes of `key` waiting for the next group (tests).
    public func waitingWrites(of key: Key) -> Int { self.state.withLock { $0.lanes[key]?.waiting.count ?? 0 } }

    /// `job`'s result: run alone, or together with the writes of `key` that waited with it.
    public func write(_ job: Job, key: Key, alone: Alone, together: Together) async throws -> Value {
        switch try await self.turn(job, key) {
        case .lead(let group): return try await self.lead(group, key, alone: alone, together: together)
        case .alone: return try await alone(job)
        case .done(let result): return try result.get()
        }
    }

    /// `.lead` at once when no write of `key` runs; otherwise waits for the group it joins (cancellable while waiting).
    private func turn(_ job: Job, _ key: Key) async throws -> Turn {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let leads = self.state.withLock { state -> Bool? in
                    // Checked under the lock that `onCancel` takes: either it finds this writer, or this sees it.
                    if Task.isCancelled { return nil }
                    guard state.lanes[key] != nil else {
                        state.lanes[key] = Lane(leader: id)
                        return true
                    }
                    state.lanes[key]!.waiting.append(Writer(id: id, job: job, continuation: continuation))
                    return false
                }
                switch leads {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume(returning: .lead([Writer(id: id, job: job)]))
                case false?: break
                }
            }
        } onCancel: {
            // Only a writer still waiting leaves; one whose group runs stays in it (its write may commit).
            let writer = self.state.withLock { state -> Writer? in
                guard let index = state.lanes[key]?.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                return state.lanes[key]!.waiting.remove(at: index)
            }
            writer?.continuation?.resume(throwing: CancellationError())
        }
    }

    /// Runs the group, answers its riders, and hands the key to the first of those who waited. A leader whose request
    /// gives up (cancelled: its deadline passed) hands the key over at once and lets its group end on its own: PostgresNIO
    /// has been seen never to end a query on a connection PostgreSQL closed, and the key must not wait for it. Writes of
    /// one database stay ordered by its lock (docs/SYNC.md); the key only gathers them.
    private func lead(_ group: [Writer], _ key: Key, alone: Alone, together: Together) async throws -> Value {
        let results: [Result<Value, any Error>]? = await withTaskCancellationHandler {
            if group.count == 1 {
                do { return [.success(try await alone(group[0].job))] } catch { return [.failure(error)] }
            }
            return try? await together(group.map(\.job))
        } onCancel: {
            self.handOff(key, from: group[0].id)
        }
        self.handOff(key, from: group[0].id)
        for (index, rider) in group.enumerated().dropFirst() {
            if let results { rider.continuation?.resume(returning: .done(results[index])) } else { rider.continuation?.resume(returning: .alone) }
        }
        guard let results else { return try await alone(group[0].job) }
        return try results[0].get()
    }

    private func handOff(_ key: Key, from leader: Int) {
        let next = self.state.withLock { $0.handOff(key, from: leader, limit: self.groupLimit) }
        if let next { next[0].continuation?.resume(returning: .lead(next)) }
    }
}
