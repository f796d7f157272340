import CloudCore
import Testing

@Suite struct ModificationPlanTests {
    let stamp = ChangeStamp(timestamp: 1000, userRecordName: "_u", deviceID: "d")
    let old = ChangeStamp(timestamp: 1, userRecordName: "_u", deviceID: "d")

    func stored(_ name: String, seq: Int64, deleted: Bool = false, fields: [String: FieldValue] = ["a": FieldValue(type: .string, value: "x")])
        -> Record
    {
        Record(
            recordName: name, recordType: "Visit", changeSeq: seq, deleted: deleted, fields: deleted ? [:] : fields, created: self.old,
            modified: self.old)
    }

    func plan(_ operations: [RecordOperation], _ existing: [Record] = []) -> ModificationPlan {
        ModificationPlan(
            operations: operations, existing: Dictionary(uniqueKeysWithValues: existing.map { ($0.recordName, $0) }),
            firstSeq: 10, stamp: self.stamp, maxRecordBytes: 1_000_000)
    }

    @Test func createOfAnExistingRecordIsExistsWithTheServerRecord() throws {
        let plan = self.plan([RecordOperation(type: .create, recordName: "r", recordType: "Visit")], [self.stored("r", seq: 3)])
        guard case .failed(_, let error, let server) = plan.outcomes[0] else { Issue.record("expected failure"); return }
        #expect(error.code == .exists)
        #expect(server?.changeSeq == 3)
        #expect(plan.writes.isEmpty)
    }

    @Test func createOverATombstoneStartsAFreshRecord() throws {
        let plan = self.plan([RecordOperation(type: .create, recordName: "r", recordType: "Visit")], [self.stored("r", seq: 3, deleted: true)])
        #expect(plan.writes.map(\.changeSeq) == [10])
        #expect(plan.writes[0].created == self.stamp)
    }

    @Test func staleChangeTagIsAConflictCarryingTheServerRecord() throws {
        let plan = self.plan(
            [RecordOperation(type: .update, recordName: "r", changeTag: ChangeTag.make(2), fields: ["a": ["value": "y"]])], [self.stored("r", seq: 3)]
        )
        guard case .failed(_, let error, let server) = plan.outcomes[0] else { Issue.record("expected conflict"); return }
        #expect(error.code == .conflict)
        #expect(server?.fields["a"]?.value == "x")
    }

    @Test func updateMergesFieldsAndNullRemovesOne() throws {
        let existing = self.stored("r", seq: 3, fields: ["a": FieldValue(type: .string, value: "x"), "b": FieldValue(type: .int64, value: 1)])
        let plan = self.plan(
            [RecordOperation(type: .update, recordName: "r", changeTag: ChangeTag.make(3), fields: ["b": [:], "c": ["value": 2.5]])], [existing])
        #expect(plan.writes[0].fields == ["a": FieldValue(type: .string, value: "x"), "c": FieldValue(type: .double, value: 2.5)])
        #expect(plan.writes[0].created == self.old)
        #expect(plan.writes[0].modified == self.stamp)
    }

    @Test func replaceDropsUnlistedFields() throws {
        let plan = self.plan(
            [RecordOperation(type: .replace, recordName: "r", changeTag: ChangeTag.make(3), fields: ["z": ["value": "new"]])],
            [self.stored("r", seq: 3)])
        #expect(Array(plan.writes[0].fields.keys) == ["z"])
    }

    @Test func forceOperationsIgnoreTagsAndForceUpdateCreates() throws {
        let plan = self.plan(
            [
                RecordOperation(type: .forceUpdate, recordName: "new", recordType: "Visit", fields: ["a": ["value": 1]]),
                RecordOperation(type: .forceReplace, recordName: "r", changeTag: "stale", fields: [:]),
            ], [self.stored("r", seq: 3)])
        #expect(plan.writes.map(\.recordName) == ["new", "r"])
        #expect(plan.writes.map(\.changeSeq) == [10, 11])
        #expect(plan.lastSeq == 11)
    }

    @Test func deletesNeedTheRecordAndForceDeleteOfATombstoneIsIdempotent() throws {
        let plan = self.plan(
            [
                RecordOperation(type: .delete, recordName: "missing", changeTag: "1"),
                RecordOperation(type: .forceDelete, recordName: "gone"),
                RecordOperation(type: .delete, recordName: "r", changeTag: ChangeTag.make(3)),
            ], [self.stored("gone", seq: 2, deleted: true), self.stored("r", seq: 3)])
        guard case .failed(_, let error, _) = plan.outcomes[0] else { Issue.record("expected NOT_FOUND"); return }
        #expect(error.code == .notFound)
        guard case .deleted = plan.outcomes[1], case .deleted = plan.outcomes[2] else { Issue.record("expected deletions"); return }
        #expect(plan.writes.count == 1)
        #expect(plan.writes[0].deleted && plan.writes[0].fields.isEmpty)
    }

    /// A malformed operation fails alone with BAD_REQUEST; the batch's other operations are still planned.
    @Test func malformedOperationsFailAlone() {
        let malformed: [(RecordOperation, [Record])] = [
            (RecordOperation(type: .update, recordName: "r", fields: [:]), [self.stored("r", seq: 3)]),
            (RecordOperation(type: .create, recordName: "r"), []),
            (RecordOperation(type: .create, recordName: "r", recordType: "V", fields: ["x": ["value": "v", "type": "NOPE"]]), []),
            (RecordOperation(type: .update, recordName: "r", recordType: "Other", changeTag: ChangeTag.make(3)), [self.stored("r", seq: 3)]),
            (.refused("r", .badRequest("unreadable")), []),
        ]
        for (operation, existing) in malformed {
            let plan = self.plan([operation, RecordOperation(type: .create, recordName: "ok", recordType: "V")], existing)
            guard case .failed("r", let error, nil) = plan.outcomes[0] else { Issue.record("expected a refusal: \(plan.outcomes)"); continue }
            #expect(error.code == .badRequest)
            #expect(plan.writes.map(\.recordName) == ["ok"])
            #expect(plan.writes.map(\.changeSeq) == [10], "a refused operation uses no change number")
        }
        let twice = self.plan([
            RecordOperation(type: .create, recordName: "a", recordType: "V"), RecordOperation(type: .create, recordName: "a", recordType: "V"),
        ])
        #expect(twice.outcomes.map(\.isFailure) == [false, true])
        #expect(twice.creates == ["a"])
    }

    @Test func recordsOverTheSizeLimitAreRejected() {
        let plan = ModificationPlan(
            operations: [
                RecordOperation(
                    type: .create, recordName: "r", recordType: "V", fields: ["big": ["value": .string(String(repeating: "x", count: 2000))]])
            ],
            existing: [:], firstSeq: 1, stamp: self.stamp, maxRecordBytes: 1000)
        guard case .failed(_, let error, _) = plan.outcomes[0] else { Issue.record("expected a refusal"); return }
        #expect(error.reason.contains("limit is 1000 bytes"))
        #expect(plan.writes.isEmpty)
    }
}
