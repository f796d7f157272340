import CloudCore
import CloudSync
import Foundation
import SportsDomain

/// An achievement as the app shows it: its definition, and whether and when the person earned it.
public struct Achievement: Sendable, Equatable {
    public var id: String
    public var name: String
    public var description: String
    /// The day (ms) of the visit that completed it; nil when never earned.
    public var earnedAt: Int64?
    /// Set when a deleted visit took it away again.
    public var revokedAt: Int64?
    /// The visits that earned it, oldest first.
    public var visitRecordNames: [String]

    public var isEarned: Bool { self.earnedAt != nil && self.revokedAt == nil }
}

extension StadiumCloudClient {
    /// Every achievement definition this device has synced, with the person's state, by name.
    public func achievements() throws -> [Achievement] {
        let records = try self.store.records(ofType: "Achievement", scope: .private)
        let byName = Dictionary(records.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        return try self.store.records(ofType: "AchievementDefinition", scope: .public).filter { $0.fields["deprecatedAt"] == nil }.map { definition in
            let record = byName[definition.recordName]
            return Achievement(
                id: definition.recordName, name: definition.fields["name"]?.value.stringValue ?? definition.recordName,
                description: definition.fields["description"]?.value.stringValue ?? "",
                earnedAt: record?.fields["earnedAt"]?.value.int64Value, revokedAt: record?.fields["revokedAt"]?.value.int64Value,
                visitRecordNames: record?.fields["visits"]?.value.arrayValue?.compactMap { $0["recordName"]?.stringValue } ?? [])
        }.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// Recomputes the person's achievements from the visits on this device and the synced canonical data, and
    /// queues an edit for each one that changed (one record per definition, named by it, so devices converge).
    /// Runs after every sync and every visit change; without canonical data yet it does nothing.
    /// - Returns: the names of the achievement records it changed.
    @discardableResult
    public func updateAchievements(now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) throws -> [String] {
        let engine = try self.achievementEngine()
        guard !engine.definitions.isEmpty else { return [] }
        let visits = try self.store.records(ofType: "StadiumVisit", scope: .private).compactMap { AchievementEngine.Visit(record: Self.record(from: $0)) }
        let existing = try self.store.records(ofType: "Achievement", scope: .private).map(Self.record(from:))
        let edits = engine.edits(
            earned: engine.evaluate(visits), existing: Dictionary(existing.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first }),
            now: now)
        for edit in edits { try self.store.save(edit.recordName, type: "Achievement", fields: edit.fields) }
        return edits.map(\.recordName)
    }

    /// A device record as the shared engine reads it.
    static func record(from local: LocalRecord) -> Record {
        let stamp = ChangeStamp(timestamp: 0, userRecordName: "", deviceID: "")
        return Record(recordName: local.recordName, recordType: local.recordType, changeSeq: 0, fields: local.fields, created: stamp, modified: stamp)
    }
}
