import Synchronization

/// Tells whoever watches a component that its state changed. The component calls `changed()` after each change worth
/// watching (a waiter registered or gone, a connection closed); a watcher notes `generation`, looks at the state, and
/// when it is not yet what it waits for awaits `changed(since:)`. Tests wait on it instead of polling on a timer.
public final class StateSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var watchers: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// How many changes there have been.
    public var generation: UInt64 { self.state.withLock { $0.generation } }

    public func changed() {
        let watchers = self.state.withLock { state in
            state.generation &+= 1
            defer { state.watchers.removeAll() }
            return Array(state.watchers.values)
        }
        for watcher in watchers { watcher.resume() }
    }

    /// Returns once there has been a change after the one numbered `seen`, or once the task is cancelled.
    public func changed(since seen: UInt64) async {
        let id = self.state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (watcher: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { state in
                    guard state.generation == seen, !Task.isCancelled else { return true }
                    state.watchers[id] = watcher
                    return false
                }
                if now { watcher.resume() }
            }
        } onCancel: {
            self.state.withLock { $0.watchers.removeValue(forKey: id) }?.resume()
        }
    }
}
