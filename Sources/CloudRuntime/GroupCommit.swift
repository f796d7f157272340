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

    private struct State {
        /// By key with a write under way: the writers that asked while it ran (the next group's).
        var waiting: [Key: [Writer]] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    /// The most writes one transaction carries; the others wait for the next.
    public let groupLimit: Int

    public init(groupLimit: Int = 64) {
        precondition(groupLimit > 0)
        self.groupLimit = groupLimit
    }

    /// Keys with a write under way (tests: nothing is left behind).
    public var busyKeys: Int { self.state.withLock { $0.waiting.count } }

    /// Writes of `key` waiting for the next group (tests).
    public func waitingWrites(of key: Key) -> Int { self.state.withLock { $0.waiting[key]?.count ?? 0 } }

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
                    guard state.waiting[key] != nil else {
                        state.waiting[key] = []
                        return true
                    }
                    state.waiting[key]!.append(Writer(id: id, job: job, continuation: continuation))
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
                guard let index = state.waiting[key]?.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiting[key]!.remove(at: index)
            }
            writer?.continuation?.resume(throwing: CancellationError())
        }
    }

    /// Runs the group, answers its riders, and hands the next group to the first of those who waited.
    private func lead(_ group: [Writer], _ key: Key, alone: Alone, together: Together) async throws -> Value {
        let results: [Result<Value, any Error>]?
        if group.count == 1 {
            do { results = [.success(try await alone(group[0].job))] } catch { results = [.failure(error)] }
        } else {
            results = try? await together(group.map(\.job))
        }
        let next = self.state.withLock { state -> [Writer]? in
            let boarding = min(state.waiting[key]!.count, self.groupLimit)
            guard boarding > 0 else {
                state.waiting[key] = nil
                return nil
            }
            let next = Array(state.waiting[key]!.prefix(boarding))
            state.waiting[key]!.removeFirst(boarding)
            return next
        }
        for (index, rider) in group.enumerated().dropFirst() {
            if let results { rider.continuation?.resume(returning: .done(results[index])) } else { rider.continuation?.resume(returning: .alone) }
        }
        if let next { next[0].continuation?.resume(returning: .lead(next)) }
        guard let results else { return try await alone(group[0].job) }
        return try results[0].get()
    }
}
