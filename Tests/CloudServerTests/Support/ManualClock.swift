import CloudCore
import CloudRuntime
import Synchronization

/// A clock that moves only when the test says so: `advance(by:)` moves its time and wakes the sleepers whose
/// time has come. Token grace, URL lifetimes and deadlines are tested with it in milliseconds, never by sleeping.
final class ManualClock: Sendable {
    private struct State {
        var now: Int64
        var sleepers: [Int: (until: Int64, wake: CheckedContinuation<Void, any Error>)] = [:]
        var nextID = 0
    }

    private let state: Mutex<State>

    init(startingAt now: Int64 = Timestamp.now) { self.state = Mutex(State(now: now)) }

    /// The `ServerClock` to put in the configuration.
    var clock: ServerClock { ServerClock(now: { self.now }, sleep: { try await self.sleep(for: $0) }) }

    var now: Int64 { self.state.withLock { $0.now } }

    func advance(by duration: Duration) {
        let due = self.state.withLock { state in
            state.now += duration.milliseconds
            let due = state.sleepers.filter { $0.value.until <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.wake)
        }
        self.sleepersChanges.changed()
        for wake in due { wake.resume() }
    }

    /// When the first sleeper wakes (ms), if any sleeps.
    var nextWake: Int64? { self.state.withLock { $0.sleepers.values.map(\.until).min() } }

    /// How many tasks sleep on this clock now.
    var sleeping: Int { self.state.withLock { $0.sleepers.count } }
    /// Changed whenever `sleeping` may have changed.
    let sleepersChanges = StateSignal()

    /// Returns once `count` tasks sleep on this clock, so an `advance` cannot come before the sleep it should end.
    func waitForSleepers(_ count: Int) async throws {
        try await eventually("\(count) sleeper(s) on the clock", on: self.sleepersChanges) { self.sleeping >= count }
    }

    /// Returns once a task sleeps on this clock until exactly `time` (ms): one sleep among others of other lengths.
    func waitForSleeper(until time: Int64) async throws {
        try await eventually("a sleeper until \(time)", on: self.sleepersChanges) {
            self.state.withLock { $0.sleepers.values.contains { $0.until == time } }
        }
    }

    private func sleep(for duration: Duration) async throws {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (wake: CheckedContinuation<Void, any Error>) in
                let cancelled = self.state.withLock { state in
                    if Task.isCancelled { return true }
                    state.sleepers[id] = (state.now + duration.milliseconds, wake)
                    return false
                }
                if cancelled { wake.resume(throwing: CancellationError()) } else { self.sleepersChanges.changed() }
            }
        } onCancel: {
            self.state.withLock { $0.sleepers.removeValue(forKey: id) }?.wake.resume(throwing: CancellationError())
            self.sleepersChanges.changed()
        }
    }
}
