import CloudCore
import Testing

@Suite struct FieldMergeTests {
    let owners: [String: FieldOwner] = ["canonicalId": .immutable, "name": .system, "capacity": .system, "userNickname": .user, "isFavorite": .user]

    func s(_ text: String) -> FieldValue { FieldValue(type: .string, value: .string(text)) }

    @Test func systemFieldsUpdateUserFieldsStayImmutableFieldsAreRefused() {
        let stored: [String: FieldValue] = [
            "canonicalId": s("stadium_mlb_oracle_park"), "name": s("AT&T Park"), "capacity": FieldValue(type: .int64, value: 41_915),
            "userNickname": s("The Phone Booth"), "isFavorite": FieldValue(type: .int64, value: 1),
        ]
        let incoming: [String: FieldValue] = ["canonicalId": s("stadium_mlb_oracle_park"), "name": s("Oracle Park"), "userNickname": s("ignored")]
        let merge = FieldMerge(stored: stored, incoming: incoming, owners: self.owners)
        #expect(merge.fields["name"] == s("Oracle Park"))
        #expect(merge.fields["capacity"] == nil, "a system field the source dropped is removed")
        #expect(merge.fields["userNickname"] == s("The Phone Booth"))
        #expect(merge.fields["isFavorite"] == FieldValue(type: .int64, value: 1))
        #expect(merge.changed == ["capacity", "name"])
        #expect(merge.refused.isEmpty)

        let moved = FieldMerge(stored: stored, incoming: ["canonicalId": s("stadium_mlb_other")], owners: self.owners)
        #expect(moved.refused == ["canonicalId"])
        #expect(moved.fields["canonicalId"] == s("stadium_mlb_oracle_park"))
    }

    @Test func sameDataIsUnchangedAndNewRecordsTakeEverything() {
        let fields: [String: FieldValue] = ["canonicalId": s("x_y"), "name": s("A")]
        #expect(FieldMerge(stored: fields, incoming: fields, owners: self.owners).isUnchanged)
        let created = FieldMerge(stored: nil, incoming: fields, owners: self.owners)
        #expect(created.fields == fields)
        #expect(created.changed == ["canonicalId", "name"])
    }
}
