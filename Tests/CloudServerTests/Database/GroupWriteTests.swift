import CloudCore
import CloudHTTP
@testable import CloudPostgres
import Foundation
import Testing

/// A group of batches written together (`RecordStore.writeTogether`), of one database or several, is planned in memory
/// and stored in one statement: each batch must see the ones before it in its own database, and only those, be
/// numbered after them, and fail alone, exactly as if each had committed on its own.
@Suite(.bounded) struct GroupWriteTests {
    static let logger = TestDatabase.logger

    static func batch(
        _ operations: [RecordOperation], zone: String = defaultZoneName, atomic: Bool = false, in database: DatabaseRef, at timestamp: Int64,
        key: IdempotentWrite? = nil
    ) -> RecordStore.WriteBatch {
        RecordStore.WriteBatch(
            operations: operations, zoneName: zone, atomic: atomic, database: database,
            stamp: ChangeStamp(timestamp: timestamp, userRecordName: "_w", deviceID: "d\(timestamp)"), idempotency: key, check: nil, person: nil)
    }

    static func save(_ type: OperationType, _ name: String, _ fields: [String: Int64]) -> RecordOperation {
        RecordOperation(type: type, recordName: name, recordType: "Note", fields: fields.mapValues { ["value": .int($0)] })
    }

    static func fields(of name: String, in store: RecordStore, _ database: DatabaseRef, zone: String = defaultZoneName) async throws
        -> RecordSnapshot?
    {
        try await store.lookup([(name, nil)], zoneName: zone, in: database, logger: Self.logger)[0]
    }

    static func saved(_ result: Result<ModifyResult, any Error>) throws -> [Record] {
        try result.get().outcomes.compactMap { if case .saved(let record) = $0 { record } else { nil } }
    }

    /// Regression: the group keyed records and zones by `String`, whose equality takes canonically equivalent names
    /// (é precomposed and decomposed) for one, where PostgreSQL keeps two: the second create was refused as EXISTS,
    /// and a save of each name was stored as one record.
    @Test func namesEqualOnlyAsUnicodeAreTwoRecordsAndTwoZones() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let database = try await ConcurrencyTests.privateDatabase(of: "groupnames", in: dependencies)
            let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
            _ = try await store.modifyZones([.create(composed), .create(decomposed)], in: database, logger: Self.logger)
            let results = try await store.writeTogether(
                [
                    Self.batch([Self.save(.create, composed, ["n": 1])], in: database, at: 10),
                    Self.batch([Self.save(.create, decomposed, ["n": 2])], in: database, at: 11),
                    Self.batch([Self.save(.forceReplace, "r", ["n": 3])], zone: composed, in: database, at: 12),
                    Self.batch([Self.save(.forceReplace, "r", ["n": 4])], zone: decomposed, in: database, at: 13),
                ], logger: Self.logger)
            for result in results { #expect(try Self.saved(result).count == 1) }
            #expect(try await Self.fields(of: composed, in: store, database)?.fieldsJSON.contains("1") == true)
            #expect(try await Self.fields(of: decomposed, in: store, database)?.fieldsJSON.contains("2") == true)
            #expect(try await Self.fields(of: "r", in: store, database, zone: composed)?.fieldsJSON.contains("3") == true)
            #expect(try await Self.fields(of: "r", in: store, database, zone: decomposed)?.fieldsJSON.contains("4") == true)
        }
    }

    @Test func eachBatchSeesTheOnesBeforeItAndFailsAlone() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let database = try await ConcurrencyTests.privateDatabase(of: "groupsees", in: dependencies)
            _ = try await store.modify(
                [Self.save(.create, "kept", ["n": 0]), Self.save(.create, "gone", ["n": 0])],
                zoneName: defaultZoneName, atomic: nil, in: database, stamp: ChangeStamp(timestamp: 1, userRecordName: "_w", deviceID: "d"),
                logger: Self.logger)
            _ = try await store.modify(
                [RecordOperation(type: .forceDelete, recordName: "gone")],
                zoneName: defaultZoneName, atomic: nil, in: database, stamp: ChangeStamp(timestamp: 2, userRecordName: "_w", deviceID: "d"),
                logger: Self.logger)
            let before = try await store.changes(
                zoneName: defaultZoneName, since: nil, limit: nil, desiredKeys: [], recordTypes: nil, in: database, logger: Self.logger)
            let together = store.writesWrittenTogether

            let results = try await store.writeTogether(
                [
                    Self.batch([Self.save(.create, "x", ["n": 1, "m": 1])], in: database, at: 10),
                    Self.batch([Self.save(.forceUpdate, "x", ["n": 2])], in: database, at: 11),
                    Self.batch([Self.save(.create, "x", ["n": 9])], in: database, at: 12),
                    Self.batch([Self.save(.create, "gone", ["n": 3])], in: database, at: 13),
                    Self.batch([Self.save(.forceUpdate, "kept", ["n": 4])], zone: "nowhere", in: database, at: 14),
                    Self.batch([Self.save(.forceUpdate, "kept", ["n": 5])], in: database, at: 15),
                ], logger: Self.logger)

            let first = try Self.saved(results[0])[0]
            let second = try Self.saved(results[1])[0]
            #expect(second.changeSeq == first.changeSeq + 1)
            #expect(second.fields["m"] != nil, "the second batch planned on the first one's record")
            #expect(second.created.timestamp == 10)
            guard case .failed(_, let exists, let current) = try results[2].get().outcomes[0] else { Issue.record("a create over x"); return }
            #expect(exists.code == .exists)
            #expect(current?.changeTag == second.changeTag)
            #expect(try Self.saved(results[3])[0].created.timestamp == 13, "a create over a tombstone starts a new record")
            #expect(throws: CloudError.self) { try results[4].get() }
            #expect(try Self.saved(results[5])[0].changeSeq == second.changeSeq + 2)
            #expect(store.writesWrittenTogether == together + 6)

            let x = try #require(try await Self.fields(of: "x", in: store, database))
            #expect(x.changeSeq == second.changeSeq)
            #expect(x.created.timestamp == 10)
            #expect(try await Self.fields(of: "gone", in: store, database)?.created.timestamp == 13)
            #expect(try await Self.fields(of: "kept", in: store, database)?.modified.timestamp == 15)
            let delta = try await store.changes(
                zoneName: defaultZoneName, since: before.syncToken, limit: nil, desiredKeys: [], recordTypes: nil, in: database, logger: Self.logger)
            #expect(delta.records.map(\.recordName) == ["x", "gone", "kept"])
            // The database's counter moved past the group: the next write is numbered after it.
            let next = try await store.modify(
                [Self.save(.forceUpdate, "kept", ["n": 6])],
                zoneName: defaultZoneName, atomic: nil, in: database, stamp: ChangeStamp(timestamp: 16, userRecordName: "_w", deviceID: "d"),
                logger: Self.logger)
            guard case .saved(let last) = next.outcomes[0] else { Issue.record("the next write"); return }
            #expect(last.changeSeq == second.changeSeq + 3)
        }
    }

    /// A delete needs the database (its cascade): what the group wrote before it is stored first, and the batches after
    /// it read the database again.
    @Test func aBatchThatNeedsTheDatabaseFindsTheGroupStoredBeforeIt() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let database = try await ConcurrencyTests.privateDatabase(of: "groupflush", in: dependencies)
            _ = try await store.modify(
                [Self.save(.create, "y", ["n": 0])],
                zoneName: defaultZoneName, atomic: nil, in: database, stamp: ChangeStamp(timestamp: 1, userRecordName: "_w", deviceID: "d"),
                logger: Self.logger)
            let results = try await store.writeTogether(
                [
                    Self.batch([Self.save(.forceUpdate, "a", ["n": 1, "m": 1])], in: database, at: 10),
                    Self.batch([RecordOperation(type: .forceDelete, recordName: "y")], in: database, at: 11),
                    Self.batch([Self.save(.create, "y", ["n": 2])], in: database, at: 12),
                    Self.batch([Self.save(.forceUpdate, "a", ["n": 3])], in: database, at: 13),
                ], logger: Self.logger)
            #expect(results.allSatisfy { (try? $0.get())?.outcomes.allSatisfy { !$0.isFailure } == true })
            let a = try #require(try await Self.fields(of: "a", in: store, database))
            #expect(a.fieldsJSON.contains("\"m\""), "the last batch read the first one's write")
            #expect(a.created.timestamp == 10)
            let y = try #require(try await Self.fields(of: "y", in: store, database))
            #expect(y.created.timestamp == 12)
            #expect(!y.deleted)
        }
    }

    /// A key used twice in one group is answered once; a key reused for another request is refused alone.
    @Test func aKeyUsedTwiceInAGroupWritesOnce() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let database = try await ConcurrencyTests.privateDatabase(of: "groupkeys", in: dependencies)
            func key(_ hash: UInt8) -> IdempotentWrite {
                IdempotentWrite(key: "k", requestHash: Data([hash])) { result in
                    StoredAnswer(status: 200, body: Array("saved \(result.outcomes.count)".utf8))
                }
            }
            let results = try await store.writeTogether(
                [
                    Self.batch([Self.save(.forceUpdate, "c", ["n": 1])], in: database, at: 10, key: key(1)),
                    Self.batch([Self.save(.forceUpdate, "c", ["n": 1])], in: database, at: 11, key: key(1)),
                    Self.batch([Self.save(.forceUpdate, "c", ["n": 2])], in: database, at: 12, key: key(2)),
                ], logger: Self.logger)
            let answer = try #require(try results[0].get().answer)
            #expect(try results[1].get().answer == answer)
            #expect(try results[1].get().outcomes.isEmpty)
            #expect(throws: CloudError.self) { try results[2].get() }
            #expect(try await Self.fields(of: "c", in: store, database)?.modified.timestamp == 10)
            let retried = try await store.modify(
                [Self.save(.forceUpdate, "c", ["n": 1])], zoneName: defaultZoneName, atomic: nil, in: database,
                stamp: ChangeStamp(timestamp: 20, userRecordName: "_w", deviceID: "d"), idempotency: key(1), logger: Self.logger)
            #expect(retried.answer == answer)
        }
    }

    /// An atomic batch that fails in a group writes nothing; the others are written.
    @Test func anAtomicBatchThatFailsWritesNothingOfItsOwn() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let database = try await ConcurrencyTests.privateDatabase(of: "groupatomic", in: dependencies)
            _ = try await store.modifyZones([.create("trip")], in: database, logger: Self.logger)
            let results = try await store.writeTogether(
                [
                    Self.batch(
                        [Self.save(.create, "p", ["n": 1]), RecordOperation(type: .update, recordName: "q", recordType: "Note")],
                        zone: "trip", atomic: true, in: database, at: 10),
                    Self.batch([Self.save(.create, "r", ["n": 1])], zone: "trip", atomic: true, in: database, at: 11),
                ], logger: Self.logger)
            #expect(try results[0].get().atomicFailed)
            #expect(try Self.saved(results[1]).map(\.recordName) == ["r"])
            #expect(try await Self.fields(of: "p", in: store, database, zone: "trip") == nil)
            #expect(try await Self.fields(of: "r", in: store, database, zone: "trip") != nil)
        }
    }

    /// Batches of several accounts share a group: each sees and numbers only its own database; one whose database is
    /// gone fails alone.
    @Test func batchesOfSeveralDatabasesSeeOnlyTheirOwn() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let mine = try await ConcurrencyTests.privateDatabase(of: "groupmine", in: dependencies)
            let theirs = try await ConcurrencyTests.privateDatabase(of: "grouptheirs", in: dependencies)
            let setup = try await store.modify(
                [Self.save(.create, "x", ["n": 1, "m": 1])],
                zoneName: defaultZoneName, atomic: nil, in: mine, stamp: ChangeStamp(timestamp: 1, userRecordName: "_w", deviceID: "d"),
                logger: Self.logger)
            guard case .saved(let minesX) = setup.outcomes[0] else { Issue.record("the setup save"); return }
            let before = try await store.changes(
                zoneName: defaultZoneName, since: nil, limit: nil, desiredKeys: [], recordTypes: nil, in: theirs, logger: Self.logger)
            let gone = DatabaseRef(id: Int64(Int32.max), scope: .private, ownerRecordName: "_gone")

            let results = try await store.writeTogether(
                [
                    Self.batch([Self.save(.create, "x", ["n": 2])], in: theirs, at: 10),
                    Self.batch([Self.save(.create, "x", ["n": 9])], in: mine, at: 11),
                    Self.batch([Self.save(.forceUpdate, "x", ["n": 3])], in: theirs, at: 12),
                    Self.batch([Self.save(.forceUpdate, "y", ["n": 4])], in: gone, at: 13),
                    Self.batch([Self.save(.forceUpdate, "y", ["n": 5])], in: mine, at: 14),
                ], logger: Self.logger)

            let theirsX = try Self.saved(results[0])[0]
            guard case .failed(_, let exists, let current) = try results[1].get().outcomes[0] else { Issue.record("a create over x"); return }
            #expect(exists.code == .exists)
            #expect(current?.changeTag == minesX.changeTag, "the other account's x is not this one's")
            let updated = try Self.saved(results[2])[0]
            #expect(updated.changeSeq == theirsX.changeSeq + 1)
            #expect(updated.fields["m"] == nil)
            #expect((try? results[3].get()) == nil)
            #expect(try Self.saved(results[4])[0].changeSeq == minesX.changeSeq + 1)

            let delta = try await store.changes(
                zoneName: defaultZoneName, since: before.syncToken, limit: nil, desiredKeys: [], recordTypes: nil, in: theirs, logger: Self.logger)
            #expect(delta.records.map(\.recordName) == ["x"])
            #expect(delta.records.first?.changeSeq == updated.changeSeq)
            #expect(try await Self.fields(of: "x", in: store, mine)?.changeSeq == minesX.changeSeq)
            #expect(try await Self.fields(of: "y", in: store, theirs) == nil)
        }
    }

    /// Accounts writing at once share groups (their databases fall into lanes, several to a lane): 6 accounts × 4
    /// writers through two stores, 40 batches of 5 saves each, while one puller per account pages its zone with a
    /// tiny limit. Every puller ends with exactly its own account's final state, no record of another's.
    @Test func accountsWritingAtOnceEachPullExactlyTheirOwn() async throws {
        try await withTestStore { dependencies in
            let store = dependencies.records
            let stores = [store, ConcurrencyTests.secondStore(beside: store)]
            var made: [DatabaseRef] = []
            for account in 0..<6 { made.append(try await ConcurrencyTests.privateDatabase(of: "lanes\(account)", in: dependencies)) }
            let databases = made
            let together = stores.map(\.writesWrittenTogether)
            let writersDone = ManagedAtomicFlag()
            @Sendable func drain(_ replica: inout ConcurrencyTests.Replica, _ database: DatabaseRef, limit: Int) async throws {
                var page: ZoneChanges
                repeat {
                    page = try await store.changes(
                        zoneName: defaultZoneName, since: replica.token, limit: limit, desiredKeys: [], recordTypes: nil, in: database,
                        logger: Self.logger)
                    replica.apply(page)
                } while page.moreComing
            }
            async let pulled = withThrowingTaskGroup(of: (Int, ConcurrencyTests.Replica).self) { group in
                for (account, database) in databases.enumerated() {
                    group.addTask {
                        var replica = ConcurrencyTests.Replica()
                        while !writersDone.isSet { try await drain(&replica, database, limit: 4) }
                        try await drain(&replica, database, limit: 4)
                        return (account, replica)
                    }
                }
                return try await group.reduce(into: [Int: ConcurrencyTests.Replica]()) { $0[$1.0] = $1.1 }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<24 {
                    group.addTask {
                        let account = writer % databases.count
                        var generator = SystemRandomNumberGenerator()
                        for batch in 0..<40 {
                            let operations = (0..<30).shuffled(using: &generator).prefix(5).map { n in
                                Self.save(batch % 3 == 0 ? .forceReplace : .forceUpdate, "a\(account)-r\(n)", ["w": Int64(writer * 1000 + batch)])
                            }
                            _ = try await stores[writer % 2].modify(
                                operations, zoneName: defaultZoneName, atomic: nil, in: databases[account],
                                stamp: ChangeStamp(timestamp: Int64(batch), userRecordName: "_w", deviceID: "w\(writer)"), logger: Self.logger)
                        }
                    }
                }
                try await group.waitForAll()
            }
            writersDone.set()
            let replicas = try await pulled
            for (account, database) in databases.enumerated() {
                var final = ConcurrencyTests.Replica()
                try await drain(&final, database, limit: 200)
                #expect(final.records.count == 30)
                #expect(final.records.keys.allSatisfy { $0.hasPrefix("a\(account)-") })
                #expect(replicas[account]?.records == final.records)
            }
            for (store, before) in zip(stores, together) { #expect(store.writesWrittenTogether > before) }
        }
    }
}
