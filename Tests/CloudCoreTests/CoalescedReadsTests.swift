import CloudCore
import Synchronization
import Testing

/// `CoalescedReads`: readers share the next read, never one under way; failures and cancellations leave nothing behind.
@Suite struct CoalescedReadsTests {
    /// A read that waits until the test lets it end, and numbers the reads in the order they started.
    final class GatedReads: Sendable {
        private let state = Mutex<(started: Int, gates: [CheckedContinuation<Void, Never>])>((0, []))

        var started: Int { self.state.withLock { $0.started } }

        /// The read: its number (counted when it starts), returned once `open` lets it go.
        func read() async -> Int {
            await withCheckedContinuation { gate in
                self.state.withLock { state in
                    state.started += 1
                    state.gates.append(gate)
                }
            }
            return self.state.withLock { $0.started }
        }

        /// Lets the waiting reads end.
        func open() {
            for gate in self.state.withLock({ state in defer { state.gates = [] }; return state.gates }) { gate.resume() }
        }

        /// Until `count` reads have started and wait at the gate.
        func waitForStarted(_ count: Int) async {
            while self.state.withLock({ $0.started < count || $0.gates.isEmpty }) { await Task.yield() }
        }
    }

    final class Counter: Sendable {
        private let value = Atomic<Int>(0)
        var count: Int { self.value.load(ordering: .relaxed) }
        func next() -> Int { self.value.add(1, ordering: .relaxed).newValue }
    }

    @Test func readersWhoAskDuringAReadShareTheNextOne() async throws {
        let reads = CoalescedReads<String, Int>()
        let gated = GatedReads()
        async let first = reads.read("zone") { await gated.read() }
        await gated.waitForStarted(1)
        // These ask while read 1 runs: none may get it, since it started before they asked.
        let later = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<5 { group.addTask { try await reads.read("zone") { await gated.read() } } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
        }
        while reads.waitingReaders("zone") < 5 { await Task.yield() }
        gated.open()
        #expect(try await first == 1)
        await gated.waitForStarted(2)
        gated.open()
        #expect(try await later.value == [2, 2, 2, 2, 2])
        #expect(gated.started == 2)
        #expect(reads.keysInFlight == 0)
    }

    @Test func otherKeysAreReadApart() async throws {
        let reads = CoalescedReads<String, Int>()
        let gated = GatedReads()
        async let first = reads.read("a") { await gated.read() }
        await gated.waitForStarted(1)
        async let second = reads.read("b") { await gated.read() }
        await gated.waitForStarted(2)
        gated.open()
        #expect(try await [first, second].sorted() == [2, 2])
    }

    @Test func whenTheSharedReadFailsEachReaderReadsOnItsOwn() async throws {
        struct Failed: Error {}
        let reads = CoalescedReads<String, Int>()
        let gated = GatedReads()
        let ownReads = Counter()
        async let first = reads.read("zone") { await gated.read() }
        await gated.waitForStarted(1)
        let later = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        // The first of them leads, and its read fails; the other two then read on their own.
                        try await reads.read("zone") {
                            if ownReads.next() == 1 { throw Failed() }
                            return 7
                        }
                    }
                }
                var values: [Int] = []
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
        while reads.waitingReaders("zone") < 3 { await Task.yield() }
        gated.open()
        _ = try await first
        let (values, failures) = try await later.value
        #expect(failures == 1)
        #expect(values == [7, 7])
        #expect(ownReads.count == 3)
        #expect(reads.keysInFlight == 0)
    }

    @Test func aWaitingReaderThatIsCancelledLeavesTheOthersTheirRead() async throws {
        let reads = CoalescedReads<String, Int>()
        let gated = GatedReads()
        async let first = reads.read("zone") { await gated.read() }
        await gated.waitForStarted(1)
        let cancelled = Task { try await reads.read("zone") { await gated.read() } }
        let kept = Task { try await reads.read("zone") { await gated.read() } }
        while reads.waitingReaders("zone") < 2 { await Task.yield() }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(reads.waitingReaders("zone") == 1)
        gated.open()
        _ = try await first
        await gated.waitForStarted(2)
        gated.open()
        #expect(try await kept.value == 2)
        #expect(reads.keysInFlight == 0)
    }
}
