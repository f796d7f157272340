import CloudCore
@testable import CloudHTTP
@testable import CloudPostgres
import CloudRuntime
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// The change-token guarantee under concurrent writers: every puller that pages from any token while others write
/// ends with exactly the server's final state. Bounded: 12 writers × 100 batches × 10 operations, through two stores
/// (two server processes): within each, concurrent writes share transactions (`GroupCommit`); between them, the
/// database lock orders the groups.
@Suite(.bounded) struct ConcurrencyTests {
    static let (writers, batches) = (12, 100)

    /// Another server process's store on the same database: its own write groups, its own optimistic writes.
    static func secondStore(beside store: RecordStore) -> RecordStore {
        RecordStore(client: store.client, signer: store.signer, limits: store.limits, clock: store.clock, justInTimeSchema: store.justInTimeSchema)
    }

    static let names = (0..<150).map { "r\($0)" }

    /// A client's local copy: record name → change tag, built only from what deltas delivered.
    struct Replica {
        var records: [String: String] = [:]
        var token: String?

        mutating func apply(_ changes: ZoneChanges) {
            for record in changes.records {
                if record.deleted { self.records[record.recordName] = nil } else { self.records[record.recordName] = record.changeTag }
            }
            self.token = changes.syncToken
        }
    }

    @Test func pullersNeverMissACommittedChange() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let logger = TestDatabase.logger
            let database = try await Self.privateDatabase(of: "concurrent", in: dependencies)
            let writersDone = ManagedAtomicFlag()
            let stores = [store, Self.secondStore(beside: store)]
            let together = stores.map(\.writesWrittenTogether)

            /// Pages from the replica's token until moreComing is false.
            @Sendable func drain(_ replica: inout Replica, limit: Int) async throws {
                var page: ZoneChanges
                repeat {
                    page = try await store.changes(
                        zoneName: defaultZoneName, since: replica.token, limit: limit, desiredKeys: [], recordTypes: nil, in: database, logger: logger
                    )
                    replica.apply(page)
                } while page.moreComing
            }

            async let pulled = withThrowingTaskGroup(of: Replica.self) { group in
                for puller in 0..<3 {
                    group.addTask {
                        var replica = Replica()
                        while !writersDone.isSet { try await drain(&replica, limit: 3 + puller * 4) }
                        // Every write has committed now: one last drain must reach the final state.
                        try await drain(&replica, limit: 3 + puller * 4)
                        return replica
                    }
                }
                return try await group.reduce(into: [Replica]()) { $0.append($1) }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<Self.writers {
                    group.addTask {
                        var generator = SystemRandomNumberGenerator()
                        for batch in 0..<Self.batches {
                            let operations = Self.names.shuffled(using: &generator).prefix(10).map { name in
                                Int.random(in: 0..<5, using: &generator) == 0
                                    ? RecordOperation(type: .forceDelete, recordName: name)
                                    : RecordOperation(
                                        type: .forceUpdate, recordName: name, recordType: "Visit",
                                        fields: ["w": ["value": .int(Int64(writer * 1000 + batch))]])
                            }
                            let stamp = ChangeStamp(
                                timestamp: Int64(Date().timeIntervalSince1970 * 1000), userRecordName: "_w", deviceID: "w\(writer)")
                            _ = try await stores[writer % 2].modify(
                                Array(operations), zoneName: defaultZoneName, atomic: nil, in: database, stamp: stamp, logger: logger)
                        }
                    }
                }
                try await group.waitForAll()
            }
            writersDone.set()
            let replicas = try await pulled
            // The server's final state, read in one pass.
            var final = Replica()
            try await drain(&final, limit: 200)
            #expect(replicas.count == 3)
            #expect(!final.records.isEmpty)
            for replica in replicas { #expect(replica.records == final.records) }
            // Both processes wrote groups, so the pullers paged through group commits of both.
            for (store, before) in zip(stores, together) { #expect(store.writesWrittenTogether > before) }
        }
    }
}

extension ConcurrencyTests {
    /// Writers that race on one record lose nothing: each `forceUpdate` keeps the fields others wrote (its base must be
    /// the latest version, never one a concurrent writer has since replaced), and `update`s with change tags count
    /// exactly. The writers go through two stores (two processes): in one, they share write groups; between the two,
    /// an optimistic write overtaken by the other's is written again under the lock. The test sees both happen.
    @Test func racingWritersOfOneRecordLoseNothing() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let logger = TestDatabase.logger
            let database = try await Self.privateDatabase(of: "racing", in: dependencies)
            @Sendable func stamp(_ writer: Int) -> ChangeStamp {
                ChangeStamp(timestamp: Int64(Date().timeIntervalSince1970 * 1000), userRecordName: "_w", deviceID: "w\(writer)")
            }
            @Sendable func read(_ name: String) async throws -> Record {
                let found = try await store.lookup([(name, nil)], zoneName: defaultZoneName, in: database, logger: logger)
                return try RecordStore.record(from: try #require(found.first ?? nil))
            }
            let (writers, rounds) = (16, 15)  // 240 fields: a record holds at most 256
            let stores = [store, Self.secondStore(beside: store)]
            let retried = stores.map(\.writesRetriedUnderLock)
            let together = stores.map(\.writesWrittenTogether)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for round in 0..<rounds {
                            let operation = RecordOperation(
                                type: .forceUpdate, recordName: "shared", recordType: "Note", fields: ["f\(writer)_\(round)": ["value": .int(1)]])
                            let result = try await stores[writer % 2].modify(
                                [operation], zoneName: defaultZoneName, atomic: nil, in: database, stamp: stamp(writer), logger: logger)
                            #expect(result.outcomes.allSatisfy { !$0.isFailure }, "\(result.outcomes)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let shared = try await read("shared")
            #expect(shared.fields.count == writers * rounds)

            // A counter incremented with change tags: a conflict answers the server's record, and the writer retries on it.
            _ = try await store.modify(
                [RecordOperation(type: .create, recordName: "counter", recordType: "Note", fields: ["n": ["value": .int(0)]])],
                zoneName: defaultZoneName, atomic: nil, in: database, stamp: stamp(0), logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var current = try await read("counter")
                        var added = 0
                        while added < 10 {
                            guard case .int(let n) = current.fields["n"]?.value else { Issue.record("no counter"); return }
                            let operation = RecordOperation(
                                type: .update, recordName: "counter", recordType: "Note", changeTag: current.changeTag,
                                fields: ["n": ["value": .int(n + 1)]])
                            let result = try await stores[writer % 2].modify(
                                [operation], zoneName: defaultZoneName, atomic: nil, in: database, stamp: stamp(writer), logger: logger)
                            switch result.outcomes[0] {
                            case .saved(let record):
                                current = record
                                added += 1
                            case .failed(_, let error, let server):
                                #expect(error.code == .conflict)
                                current = try #require(server)
                            case .deleted: Issue.record("not a delete")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let counter = try await read("counter")
            #expect(counter.fields["n"]?.value == .int(Int64(writers * 10)))
            #expect(zip(stores, retried).contains { $0.writesRetriedUnderLock > $1 })
            for (store, before) in zip(stores, together) { #expect(store.writesWrittenTogether > before) }
        }
    }
}

extension ConcurrencyTests {
    /// A write is answered only once it has committed. Outside a transaction a statement commits after its rows are
    /// sent (at the protocol's Sync); PostgreSQL holds them back until then, but a backend stopped mid-commit sends them
    /// anyway, with its error after (a fault run lost an acknowledged write that way). A constraint checked at commit
    /// fails the same way, deterministically.
    @Test func aSaveThatFailsAtCommitIsNotAnsweredAsSaved() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let logger = TestDatabase.logger
            let database = try await Self.privateDatabase(of: "commit", in: dependencies)
            try await store.client.query(
                """
                CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'refused at commit'; END $$
                """, logger: logger)
            try await store.client.query(
                """
                CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON records DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.record_name = 'doomed') EXECUTE FUNCTION refuse_at_commit()
                """, logger: logger)
            let stamp = ChangeStamp(timestamp: 1, userRecordName: "_w", deviceID: "d")
            await #expect(throws: (any Error).self) {
                _ = try await store.modify(
                    [RecordOperation(type: .create, recordName: "doomed", recordType: "Note", fields: ["n": ["value": .int(1)]])],
                    zoneName: defaultZoneName, atomic: nil, in: database, stamp: stamp, logger: logger)
            }
            let found = try await store.lookup([("doomed", nil)], zoneName: defaultZoneName, in: database, logger: logger)
            #expect(found.first ?? nil == nil)
        }
    }
}

extension ConcurrencyTests {
    /// Concurrent polls share the read of their zones' heads (`CoalescedReads`), yet a poll that starts after a save
    /// was answered always sees it: a poll joins only a read that starts after it asked. Four pollers, two of this
    /// account's zone and two of another's, keep the heads' read busy while one writer saves and polls from the token
    /// it had before, 60 times; the other account's polls stay empty.
    @Test func aPollThatStartsAfterASaveSeesItWhileOthersShareTheHeadRead() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let logger = TestDatabase.logger
            let database = try await Self.privateDatabase(of: "sharedheads", in: dependencies)
            let other = try await Self.privateDatabase(of: "otherheads", in: dependencies)
            @Sendable func poll(_ token: String?, in database: DatabaseRef) async throws -> ZoneChanges {
                try await store.changes(
                    zoneName: defaultZoneName, since: token, limit: nil, desiredKeys: [], recordTypes: nil, in: database, logger: logger)
            }
            let head = try await poll(nil, in: database).syncToken
            let otherHead = try await poll(nil, in: other).syncToken
            let done = ManagedAtomicFlag()
            async let polls = withThrowingTaskGroup(of: Int.self) { group in
                for poller in 0..<4 {
                    group.addTask {
                        let (database, token) = poller % 2 == 0 ? (database, head) : (other, otherHead)
                        var polls = 0
                        while !done.isSet {
                            let page = try await poll(token, in: database)
                            if database.id == other.id { #expect(page.records.isEmpty) }
                            polls += 1
                        }
                        return polls
                    }
                }
                return try await group.reduce(0, +)
            }
            var token = head
            for round in 0..<60 {
                let stamp = ChangeStamp(timestamp: Int64(round), userRecordName: "_w", deviceID: "w")
                let saved = try await store.modify(
                    [RecordOperation(type: .forceUpdate, recordName: "r\(round % 7)", recordType: "Note", fields: ["n": ["value": .int(Int64(round))]])],
                    zoneName: defaultZoneName, atomic: nil, in: database, stamp: stamp, logger: logger)
                #expect(saved.outcomes.allSatisfy { !$0.isFailure })
                let page = try await poll(token, in: database)
                #expect(page.records.map(\.recordName) == ["r\(round % 7)"], "round \(round)")
                token = page.syncToken
            }
            done.set()
            #expect(try await polls > 0)
            #expect(!store.zoneHeads.isReading)
        }
    }
}

extension ConcurrencyTests {
    /// Two zones whose names differ only in Unicode normalisation are two zones to PostgreSQL; one shared read of both
    /// heads gives each poll its own.
    @Test func zonesWhoseNamesAreCanonicallyEquivalentKeepTheirOwnHeads() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let logger = TestDatabase.logger
            let database = try await Self.privateDatabase(of: "unicodezones", in: dependencies)
            let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
            #expect(composed == decomposed)
            let created = try await store.modifyZones([.create(composed), .create(decomposed)], in: database, logger: logger)
            #expect(created.allSatisfy { if case .created = $0 { true } else { false } })
            let keys: Set = [ZoneHeads.Key(databaseID: database.id, zoneName: composed), ZoneHeads.Key(databaseID: database.id, zoneName: decomposed)]
            #expect(keys.count == 2)
            let heads = try await store.client.reading { connection in
                var heads: [ZoneHeads.Key: Int64] = [:]
                for try await (key, head) in try await connection.execute(ZoneHeads(keys: keys), logger: logger) { heads[key] = head.id }
                return heads
            }
            #expect(heads.count == 2)
            #expect(Set(heads.values).count == 2)
        }
    }

    /// Regression: a lookup of both names matched the rows it read by `String`, so both names answered one record.
    @Test func recordsWhoseNamesAreCanonicallyEquivalentAreLookedUpEachAsItself() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let logger = TestDatabase.logger
            let database = try await Self.privateDatabase(of: "unicoderecords", in: dependencies)
            let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
            for (name, n) in [(composed, 1), (decomposed, 2)] {
                _ = try await store.modify(
                    [RecordOperation(type: .create, recordName: name, recordType: "Note", fields: ["n": ["value": .int(Int64(n))]])],
                    zoneName: defaultZoneName, atomic: nil, in: database, stamp: ChangeStamp(timestamp: 1, userRecordName: "_w", deviceID: "d"),
                    logger: logger)
            }
            let found = try await store.lookup([(composed, nil), (decomposed, nil)], zoneName: defaultZoneName, in: database, logger: logger)
            #expect(found.map { $0.map { Array($0.recordName.utf8) } } == [Array(composed.utf8), Array(decomposed.utf8)])
        }
    }
}

extension ConcurrencyTests {
    /// A new account's private database.
    static func privateDatabase(of name: String, in dependencies: ServerDependencies) async throws -> DatabaseRef {
        let logger = TestDatabase.logger
        let account = try await dependencies.credentials.createAccount(name: name, idleMs: 3_600_000, logger: logger)
        return try await dependencies.records.database(
            container: "c", environment: "development", scope: .private, owner: account.account, logger: logger)
    }
}

extension ConcurrencyTests {
    /// Several server processes run the tombstone purge and the asset collector once at a time, not N times at once.
    @Test func aPeriodicJobRunsInOneProcessAtATime() async throws {
        try await TestServer.run { server in
            let records = server.dependencies.records
            let (started, startedSignal) = AsyncStream<Void>.makeStream()
            let (release, releaseSignal) = AsyncStream<Void>.makeStream()
            let first = Task {
                try await records.exclusively("test-job", logger: TestDatabase.logger) { () async -> Int in
                    startedSignal.yield()
                    for await _ in release { break }
                    return 1
                }
            }
            for await _ in started { break }
            // Another "process" (another connection) finds the job running and skips it.
            let skipped = try await records.exclusively("test-job", logger: TestDatabase.logger) { 2 }
            let other = try await records.exclusively("other-job", logger: TestDatabase.logger) { 3 }
            #expect(skipped == nil && other == 3)
            releaseSignal.yield()
            #expect(try await first.value == 1)
            let again = try await records.exclusively("test-job", logger: TestDatabase.logger) { 4 }
            #expect(again == 4, "released when the job ended")
        }
    }
}

extension ConcurrencyTests {
    /// Two processes' rate limiters on one database: what one lets through is taken from the other's budget.
    @Test func anAccountsBudgetIsSharedByEveryProcess() async throws {
        try await TestServer.run { server in
            let credentials = server.dependencies.credentials
            let share: RateLimiter.Share = { try await credentials.takeFromSharedBuckets($0, logger: TestDatabase.logger) }
            let (first, second) = (RateLimiter(share: share, interval: nil, clock: .system), RateLimiter(share: share, interval: nil, clock: .system))
            let limit = RateLimit(perSecond: 0.001, burst: 5)
            for _ in 0..<3 { try first.take("account:1", limit, what: "account") }
            for _ in 0..<2 { try second.take("account:1", limit, what: "account") }
            await first.shareNow()
            await second.shareNow()
            // Five of five taken between them: the second process now refuses, though it let through only two.
            #expect(throws: CloudError.self) { try second.take("account:1", limit, what: "account") }
            // Other keys keep their own budgets.
            try second.take("account:2", limit, what: "account")
            // The first learns the level the next time it shares, and refuses from then on.
            try first.take("account:1", limit, what: "account")
            await first.shareNow()
            #expect(throws: CloudError.self) { try first.take("account:1", limit, what: "account") }
        }
    }
}
