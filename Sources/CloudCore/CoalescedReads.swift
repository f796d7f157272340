import Synchronization

/// Lets concurrent readers of one key share one read. A reader joins the next read to start, never one already under
/// way, so what it gets was read after it asked, as a read of its own would be: a write acknowledged before the
/// reader asked is in it. Used for the empty poll's zone head, which many devices ask for at once.
///
/// The first reader of an idle key reads at once. Readers that ask meanwhile wait; when the read ends, the first of
/// them reads for all of them. If that read fails, each of them reads on its own (the failure may be the reader's own:
/// its deadline, its cancellation).
public final class CoalescedReads<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private enum Turn: Sendable {
        /// Read for the readers riding with you.
        case lead
        /// The shared read failed: read on your own.
        case alone
        case read(Value)
    }

    private typealias Reader = (id: Int, continuation: CheckedContinuation<Turn, any Error>)

    /// A key being read: who the running read answers, and who waits for the next.
    private struct Flight {
        var riding: [Reader] = []
        var waiting: [Reader] = []
    }

    private struct State {
        var flights: [Key: Flight] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Keys being read now (tests: nothing is left behind).
    public var keysInFlight: Int { self.state.withLock { $0.flights.count } }

    /// Readers of `key` waiting for a read (tests).
    public func waitingReaders(_ key: Key) -> Int {
        self.state.withLock { state in state.flights[key].map { $0.riding.count + $0.waiting.count } ?? 0 }
    }

    /// `body`'s value for `key`, read by this reader or by another one that started after this one asked.
    public func read(_ key: Key, _ body: () async throws -> Value) async throws -> Value {
        switch try await self.turn(key) {
        case .lead: return try await self.lead(key, body)
        case .alone: return try await body()
        case .read(let value): return value
        }
    }

    /// `.lead` at once when nobody reads `key`; otherwise waits for the next read (cancellable).
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
                    guard state.flights[key] != nil else {
                        state.flights[key] = Flight()
                        return true
                    }
                    state.flights[key]!.waiting.append((id, continuation))
                    return false
                }
                switch leads {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: continuation.resume(returning: .lead)
                case false?: break
                }
            }
        } onCancel: {
            let reader = self.state.withLock { state -> Reader? in
                guard var flight = state.flights[key] else { return nil }
                defer { state.flights[key] = flight }
                if let index = flight.waiting.firstIndex(where: { $0.id == id }) { return flight.waiting.remove(at: index) }
                if let index = flight.riding.firstIndex(where: { $0.id == id }) { return flight.riding.remove(at: index) }
                return nil
            }
            reader?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Reads for the readers riding, answers them, and hands the next read to the first of those who waited.
    private func lead(_ key: Key, _ body: () async throws -> Value) async throws -> Value {
        let result: Result<Value, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        let (answered, next) = self.state.withLock { state -> ([Reader], Reader?) in
            var flight = state.flights[key]!
            let answered = flight.riding
            (flight.riding, flight.waiting) = (flight.waiting, [])
            guard !flight.riding.isEmpty else {
                state.flights[key] = nil
                return (answered, nil)
            }
            let next = flight.riding.removeFirst()
            state.flights[key] = flight
            return (answered, next)
        }
        let turn: Turn
        switch result {
        case .success(let value): turn = .read(value)
        case .failure: turn = .alone
        }
        for reader in answered { reader.continuation.resume(returning: turn) }
        next?.continuation.resume(returning: .lead)
        return try result.get()
    }
}
