import CloudCore
import CloudRuntime
import Synchronization
import Testing

/// `CoalescedReads`: readers share the next read, never one under way, of all their keys at once; failures and
/// cancellations leave nothing behind.
@Suite struct CoalescedReadsTests {
    /// Reads that wait until the test lets them end; each answers every key it was asked for with its own number
    /// (counted when it starts), and remembers which keys it was asked for.
    final class GatedReads: Sendable {
        private let state = Mutex<(asked: [Set<String>], gates: [CheckedContinuation<Void, Never>])>(([], []))

        var asked: [Set<String>] { self.state.withLock { $0.asked } }

        func read(_ keys: Set<String>) async -> [String: Int] {
            await withCheckedContinuation { gate in
                self.state.withLock { state in
                    state.asked.append(keys)
                    state.gates.append(gate)
                }
            }
            let count = self.state.withLock { $0.asked.count }
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, count) })
        }

        /// Lets the waiting reads end.
        func open() {
            for gate in self.state.withLock({ state in defer { state.gates = [] }; return state.gates }) { gate.resume() }
        }

        /// Until `count` reads have started and one waits at the gate.
        func waitForStarted(_ count: Int) async {
            while self.state.withLock({ $0.asked.count < count || $0.gates.isEmpty }) { await Task.yield() }
        }
    }

    final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        var count: Int { self.value.load(ordering: .relaxed) }
        func next() -> Int { self.value.add(1, ordering: .relaxed).newValue }
    }

    /// Reads `keys` concurrently, each as its own reader; the values in the order of `keys`.
    static func readAll(_ reads: CoalescedReads<String, Int>, _ keys: [String], _ load: @escaping @Sendable (Set<String>) async throws -> [String: Int])
        -> Task<[Int?], any Error>
    {
        Task {
            try await withThrowingTaskGroup(of: (Int, Int?).self) { group in
                for (index, key) in keys.enumerated() { group.addTask { (index, try await reads.read(key) { try await load($0) }) } }
                var values = [Int?](repeating: nil, count: keys.count)
                for try await (index, value) in group { values[index] = value }
                return values
            }
        }
    }

    @Test func readersWhoAskDuringAReadShareTheNextOneOfAllTheirKeys() async throws {
        let reads = CoalescedReads<String, Int>()
        let gated = GatedReads()
        async let first = reads.read("a") { await gated.read($0) }
        await gated.waitForStarted(1)
        // These ask while read 1 runs: none may get it, since it started before they asked.
        let later = Self.readAll(reads, ["a", "b", "c", "a", "b"]) { await gated.read($0) }
        while reads.waitingReaders < 5 { await Task.yield() }
        gated.open()
        #expect(try await first == 1)
        await gated.waitForStarted(2)
        gated.open()
        #expect(try await later.value == [2, 2, 2, 2, 2])
        #expect(gated.asked == [["a"], ["a", "b", "c"]])
        #expect(!reads.isReading)
    }

    @Test func aKeyTheReadLeavesOutHasNoValue() async throws {
        let reads = CoalescedReads<String, Int>()
        #expect(try await reads.read("gone") { _ in [:] } == nil)
        #expect(try await reads.read("here") { keys in Dictionary(uniqueKeysWithValues: keys.map { ($0, 7) }) } == 7)
    }

    @Test func oneReadAnswersAtMostItsBatchLimit() async throws {
        let reads = CoalescedReads<String, Int>(batchLimit: 2)
        let gated = GatedReads()
        async let first = reads.read("k0") { await gated.read($0) }
        await gated.waitForStarted(1)
        let later = Self.readAll(reads, ["k1", "k2", "k3", "k4", "k5"]) { await gated.read($0) }
        while reads.waitingReaders < 5 { await Task.yield() }
        for started in 2...4 {
            gated.open()
            await gated.waitForStarted(started)
        }
        gated.open()
        _ = try await first
        let values = try await later.value
        #expect(gated.asked.map(\.count) == [1, 2, 2, 1])
        #expect(values.compactMap { $0 }.sorted() == [2, 2, 3, 3, 4])
        #expect(!reads.isReading)
    }

    @Test func whenTheSharedReadFailsEachReaderReadsOnItsOwn() async throws {
        struct Failed: Error {}
        let reads = CoalescedReads<String, Int>()
        let gated = GatedReads()
        let loads = Counter()
        async let first = reads.read("zone") { await gated.read($0) }
        await gated.waitForStarted(1)
        // The first of these leads, and its read fails; the other two then read on their own.
        let later = Task {
            try await withThrowingTaskGroup(of: Int?.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await reads.read("zone") { keys in
                            if loads.next() == 1 { throw Failed() }
                            return Dictionary(uniqueKeysWithValues: keys.map { ($0, 7) })
                        }
                    }
                }
                var values: [Int?] = []
                var failures = 0
                while let result = await group.nextResult() {
                    switch result {
                    case .success(let value): values.append(value)
                    case .failure: failures += 1
                    }
                }
                return (values, failures)
            }
        }
        while reads.waitingReaders < 3 { await Task.yield() }
        gated.open()
        _ = try await first
        let (values, failures) = try await later.value
        #expect(failures == 1)
        #expect(values == [7, 7])
        #expect(loads.count == 3)
        #expect(!reads.isReading)
    }

    @Test func aWaitingReaderThatIsCancelledLeavesTheOthersTheirRead() async throws {
        let reads = CoalescedReads<String, Int>()
        let gated = GatedReads()
        async let first = reads.read("zone") { await gated.read($0) }
        await gated.waitForStarted(1)
        let cancelled = Task { try await reads.read("zone") { await gated.read($0) } }
        let kept = Task { try await reads.read("zone") { await gated.read($0) } }
        while reads.waitingReaders < 2 { await Task.yield() }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(reads.waitingReaders == 1)
        gated.open()
        _ = try await first
        await gated.waitForStarted(2)
        gated.open()
        #expect(try await kept.value == 2)
        #expect(!reads.isReading)
    }
}
