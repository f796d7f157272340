import Synchronization

/// Lets concurrent readers share one read, of every key they ask for. A reader joins the next read to start, never
/// one already under way, so what it gets was read after it asked, as a read of its own would be: a write
/// acknowledged before the reader asked is in it. Used for the empty poll's zone heads: many devices, of one person
/// or of many, poll at once, and one statement answers them all.
///
/// The first reader while nothing is being read reads at once. Readers that ask meanwhile wait; when the read ends,
/// the first of them reads the keys of up to `batchLimit` of them in one go. If that read fails, each of them reads
/// on its own (the failure may be the reader's own: its deadline, its cancellation).
public final class CoalescedReads<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Reads the values of these keys; a key it leaves out has none.
    public typealias Load = (Set<Key>) async throws -> [Key: Value]

    private enum Turn: Sendable {
        /// Read these keys (yours among them) for the readers riding with you.
        case lead(Set<Key>)
        /// The shared read failed: read on your own.
        case alone
        case read(Value?)
    }

    private typealias Reader = (id: Int, key: Key, continuation: CheckedContinuation<Turn, any Error>)

    private struct State {
        var reading = false
        /// Readers the running read answers (they asked before it started).
        var riding: [Reader] = []
        /// Readers that asked while it ran: the next read's.
        var waiting: [Reader] = []
        var nextID = 0
    }

    private let state = Mutex(State())
    /// The most readers one read answers; the others wait for the read after it.
    public let batchLimit: Int

    public init(batchLimit: Int = 500) {
        precondition(batchLimit > 0)
        self.batchLimit = batchLimit
    }

    /// Whether a read is under way (tests: nothing is left behind).
    public var isReading: Bool { self.state.withLock { $0.reading } }

    /// Readers waiting for a read (tests).
    public var waitingReaders: Int { self.state.withLock { $0.riding.count + $0.waiting.count } }

    /// `key`'s value, read by this reader or by another one, with `load`, in a read that started after this one asked.
    /// Only the `load` of the reader that reads is called.
    public func read(_ key: Key, _ load: Load) async throws -> Value? {
        switch try await self.turn(key) {
        case .lead(let keys): return try await self.lead(keys, key, load)
        case .alone: return try await load([key])[key]
        case .read(let value): return value
        }
    }

    /// `.lead` at once when nothing is being read; otherwise waits for the next read (cancellable).
    private func turn(_ key: Key) async throws -> Turn {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let leads = self.state.withLock { state -> Bool? in
                    // Checked under the lock that `onCancel` takes: either it finds this reader, or this sees it.
                    if Task.isCancelled { return nil }
                    guard state.reading else {
                        state.reading = true
                        return true
                    }
                    state.waiting.append((id, key, continuation))
                    return false
                }
                switch leads {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume(returning: .lead([key]))
                case false?: break
                }
            }
        } onCancel: {
            let reader = self.state.withLock { state -> Reader? in
                if let index = state.waiting.firstIndex(where: { $0.id == id }) { return state.waiting.remove(at: index) }
                if let index = state.riding.firstIndex(where: { $0.id == id }) { return state.riding.remove(at: index) }
                return nil
            }
            reader?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Reads for the readers riding, answers them, and hands the next read to the first of those who waited.
    private func lead(_ keys: Set<Key>, _ key: Key, _ load: Load) async throws -> Value? {
        let result: Result<[Key: Value], any Error>
        do { result = .success(try await load(keys)) } catch { result = .failure(error) }
        let (answered, next) = self.state.withLock { state -> ([Reader], (Reader, Set<Key>)?) in
            let answered = state.riding
            let boarding = min(state.waiting.count, self.batchLimit)
            state.riding = Array(state.waiting.prefix(boarding))
            state.waiting.removeFirst(boarding)
            guard !state.riding.isEmpty else {
                state.reading = false
                return (answered, nil)
            }
            let next = state.riding.removeFirst()
            return (answered, (next, Set(state.riding.map(\.key)).union([next.key])))
        }
        for reader in answered {
            switch result {
            case .success(let values): reader.continuation.resume(returning: .read(values[reader.key]))
            case .failure: reader.continuation.resume(returning: .alone)
            }
        }
        if let (reader, keys) = next { reader.continuation.resume(returning: .lead(keys)) }
        return try result.get()[key]
    }
}
