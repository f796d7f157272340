import CloudRuntime
import Synchronization
import Testing

/// `GroupCommit`: writes of one key that arrive while one runs go together in the next transaction; other keys never
/// wait; a group that fails is written again one write at a time, so one write's failure is its own.
@Suite struct GroupCommitTests {
    /// Runs that wait until the test lets them end, and what each was given.
    final class Gate: Sendable {
        private let state = Mutex<(runs: [[Int]], gates: [CheckedContinuation<Void, Never>])>(([], []))

        var runs: [[Int]] { self.state.withLock { $0.runs } }

        func pass(_ jobs: [Int]) async {
            await withCheckedContinuation { gate in
                self.state.withLock { state in
                    state.runs.append(jobs)
                    state.gates.append(gate)
                }
            }
        }

        /// Lets the waiting runs end.
        func open() {
            for gate in self.state.withLock({ state in defer { state.gates = [] }; return state.gates }) { gate.resume() }
        }

        /// Until `count` runs have started and one waits at the gate (or the test's time limit cancels it).
        func waitForStarted(_ count: Int) async {
            while self.state.withLock({ $0.runs.count < count || $0.gates.isEmpty }), !Task.isCancelled { await Task.yield() }
        }
    }

    struct Refused: Error {}

    /// Writes `jobs` of `key` concurrently; their results (job × 10 alone, job × 100 together), in the order of `jobs`.
    static func writeAll(
        _ commit: GroupCommit<String, Int, Int>, _ key: String, _ jobs: [Int], gate: Gate, togetherFails: Bool = false
    ) -> Task<[Result<Int, any Error>], Never> {
        Task {
            await withTaskGroup(of: (Int, Result<Int, any Error>).self) { group in
                for (index, job) in jobs.enumerated() {
                    group.addTask {
                        do {
                            let value = try await commit.write(
                                job, key: key,
                                alone: { job in
                                    await gate.pass([job])
                                    if job < 0 { throw Refused() }
                                    return job * 10
                                },
                                together: { jobs in
                                    await gate.pass(jobs)
                                    if togetherFails { throw Refused() }
                                    return jobs.map { .success($0 * 100) }
                                })
                            return (index, .success(value))
                        } catch { return (index, .failure(error)) }
                    }
                }
                var results = [Result<Int, any Error>](repeating: .failure(Refused()), count: jobs.count)
                for await (index, result) in group { results[index] = result }
                return results
            }
        }
    }

    @Test func writesThatArriveDuringOneShareTheNextTransactionAndOtherKeysDoNotWait() async throws {
        let commit = GroupCommit<String, Int, Int>(groupLimit: 3)
        let gate = Gate()
        let first = Self.writeAll(commit, "a", [1], gate: gate)
        await gate.waitForStarted(1)
        let later = Self.writeAll(commit, "a", [2, 3, 4, 5], gate: gate)
        while commit.waitingWrites(of: "a") < 4 { await Task.yield() }
        // Another key goes at once, alone, while "a" is busy.
        let other = Self.writeAll(commit, "b", [6], gate: gate)
        await gate.waitForStarted(2)
        #expect(gate.runs[1] == [6])
        gate.open()
        #expect(try await first.value[0].get() == 10)
        #expect(try await other.value[0].get() == 60)
        // At most three a transaction: the four that waited go as three, then one alone.
        await gate.waitForStarted(3)
        #expect(gate.runs[2].count == 3)
        gate.open()
        await gate.waitForStarted(4)
        #expect(gate.runs[3].count == 1)
        gate.open()
        let values = try await later.value.map { try $0.get() }
        let grouped = Set(gate.runs[2])
        for (job, value) in zip([2, 3, 4, 5], values) { #expect(value == job * (grouped.contains(job) ? 100 : 10)) }
        #expect(commit.busyKeys == 0)
    }

    @Test func aGroupThatFailsIsWrittenAgainOneWriteAtATime() async throws {
        let commit = GroupCommit<String, Int, Int>()
        let gate = Gate()
        let first = Self.writeAll(commit, "a", [1], gate: gate, togetherFails: true)
        await gate.waitForStarted(1)
        let later = Self.writeAll(commit, "a", [2, -3, 4], gate: gate, togetherFails: true)
        while commit.waitingWrites(of: "a") < 3 { await Task.yield() }
        gate.open()
        _ = await first.value
        // The group, then each of its writes alone: five runs in all, whatever their order.
        while gate.runs.count < 5 {
            await Task.yield()
            gate.open()
        }
        let results = await later.value
        #expect(try results[0].get() == 20)
        #expect(throws: Refused.self) { try results[1].get() }
        #expect(try results[2].get() == 40)
        #expect(gate.runs[1].count == 3)
        #expect(commit.busyKeys == 0)
    }

    /// PostgresNIO has been seen never to end a query on a connection PostgreSQL closed (a crash, a failover): a
    /// leader stuck so must not hold its key once its request gives up, or every later write of the key waits forever.
    @Test(.timeLimit(.minutes(1))) func aLeaderWhoseRequestGaveUpNoLongerHoldsItsKey() async throws {
        let commit = GroupCommit<String, Int, Int>()
        let stuck = Gate()
        let gate = Gate()
        let first = Self.writeAll(commit, "a", [1], gate: stuck)
        await stuck.waitForStarted(1)
        let later = Self.writeAll(commit, "a", [2, 3], gate: gate)
        while commit.waitingWrites(of: "a") < 2 { await Task.yield() }
        first.cancel()
        await gate.waitForStarted(1)
        gate.open()
        let values = try await later.value.map { try $0.get() }
        #expect(values == [200, 300])
        // The stuck write ends at last, after the key moved on: it answers its own request and leaves the key alone.
        stuck.open()
        #expect(try await first.value[0].get() == 10)
        #expect(commit.busyKeys == 0)
    }
}
