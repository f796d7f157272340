import CloudCore
import Crypto
import Foundation
import SportsDomain

/// What importing the canonical source into the stored public records changes. Pure: the store loads the
/// records and writes `drafts` in one transaction.
///
/// New records are created; changed system fields are updated through `FieldMerge` (user fields kept,
/// immutable fields never changed); a venue or team whose name changed gets an alias for its old name unless
/// the source already has one; a canonical record missing from the source is deprecated (`deprecatedAt`),
/// never deleted; an unchanged record is not written, so importing the same data twice changes nothing.
public struct CanonicalImportPlan: Sendable {
    public enum Change: Sendable, Equatable {
        case created(String, type: String)
        case updated(String, type: String, fields: [String])
        case deprecated(String, type: String)
        case aliasAdded(String, for: String, oldName: String)
    }

    public var drafts: [RecordDraft] = []
    public var changes: [Change] = []

    /// The record types the import owns; records of other types in the zone are left alone.
    public static let canonicalTypes: Set<String> = [
        "League", "Conference", "Division", "Stadium", "Team", "StadiumAlias", "TeamAlias", "TeamVenue", "Game",
    ]

    /// - Throws: `CanonError` listing every immutable field the source tried to change (nothing is imported).
    /// - Parameter byHand: the source is an operator's edit, which changes any system field; a dataset's import keeps
    ///   what feeds and operators set since (`keepingFeedAndOperatorFields`).
    public init(source: [RecordDraft], stored: [String: Record], schema: Schema, now: Int64, byHand: Bool = false) throws {
        func owners(_ type: String) -> [String: FieldOwner] { schema.recordTypes[type]?.fields.mapValues(\.owner) ?? [:] }
        var refusals: [String] = []
        var sourceNames = Set<String>()
        // Names that keep an alias after this import (the source's, and aliases earlier imports added), by owner.
        var aliasNames = Set<String>()
        let addedAliases = stored.values.filter { !$0.deleted && Self.isAddedAlias($0.recordName) }
        for record in source + addedAliases.map({ RecordDraft(recordName: $0.recordName, recordType: $0.recordType, fields: $0.fields) }) {
            guard let owner = Self.aliasOwner(record), let name = record.fields["name"]?.value.stringValue else { continue }
            aliasNames.insert(owner + "\u{1F}" + name)
        }
        var renames: [(record: RecordDraft, oldName: String)] = []

        for record in source {
            sourceNames.insert(record.recordName)
            let current = stored[record.recordName].flatMap { $0.deleted ? nil : $0 }
            let incoming = byHand ? record.fields : current.map { Self.keepingFeedAndOperatorFields(of: $0, in: record.fields) } ?? record.fields
            let merge = FieldMerge(stored: current?.fields, incoming: incoming, owners: owners(record.recordType))
            if !merge.refused.isEmpty {
                refusals.append("\(record.recordName): \(merge.refused.joined(separator: ", "))")
                continue
            }
            guard let current else {
                self.drafts.append(RecordDraft(recordName: record.recordName, recordType: record.recordType, fields: merge.fields))
                self.changes.append(.created(record.recordName, type: record.recordType))
                continue
            }
            guard !merge.isUnchanged else { continue }
            self.drafts.append(RecordDraft(recordName: record.recordName, recordType: record.recordType, fields: merge.fields))
            self.changes.append(.updated(record.recordName, type: record.recordType, fields: merge.changed))
            if merge.changed.contains("name"), ["Stadium", "Team"].contains(record.recordType),
                let oldName = current.fields["name"]?.value.stringValue, !aliasNames.contains(record.recordName + "\u{1F}" + oldName)
            {
                renames.append((record, oldName))
            }
        }
        guard refusals.isEmpty else {
            throw CanonError(
                "the source changes immutable fields, which canonical ids never allow; nothing was imported: " + refusals.joined(separator: "; "))
        }
        for record in stored.values.sorted(by: { $0.recordName < $1.recordName })
        where !record.deleted && Self.canonicalTypes.contains(record.recordType) && !sourceNames.contains(record.recordName)
            && record.fields["deprecatedAt"] == nil && !Self.isAddedAlias(record.recordName)
            && !(record.fields["source"]?.value.stringValue?.hasPrefix(Self.feedSourcePrefix) ?? false)
        {
            var fields = record.fields
            fields["deprecatedAt"] = FieldValue(type: .timestamp, value: .int(now))
            self.drafts.append(RecordDraft(recordName: record.recordName, recordType: record.recordType, fields: fields))
            self.changes.append(.deprecated(record.recordName, type: record.recordType))
        }
        for (record, oldName) in renames {
            let alias = Self.alias(for: record, oldName: oldName, until: now)
            self.drafts.append(alias)
            self.changes.append(.aliasAdded(alias.recordName, for: record.recordName, oldName: oldName))
        }
    }

    /// The source's fields for a stored game, with what is newer than any file kept: the fields an operator pinned by
    /// hand, and the live fields once a score feed has reported the game (docs/FEEDS.md). Other records as they are.
    static func keepingFeedAndOperatorFields(of stored: Record, in source: [String: FieldValue]) -> [String: FieldValue] {
        guard stored.recordType == "Game" else { return source }
        let pinnedField = Game.pinnedFieldsField
        let pinned = stored.fields[pinnedField]?.value.arrayValue?.compactMap(\.stringValue) ?? []
        // The ids feeds know the game by are kept whatever the import brings.
        var kept = Set(pinned).union(["feedIds"])
        if !pinned.isEmpty { kept.insert(pinnedField) }
        if stored.fields["liveUpdatedAt"] != nil { kept.formUnion(Game.feedFields) }
        var fields = source
        for name in kept { fields[name] = stored.fields[name] }
        return fields
    }

    /// The `source` of games a score feed added (docs/FEEDS.md): no dataset file lists them, so the import does not
    /// deprecate them.
    public static let feedSourcePrefix = "feed "

    /// Aliases the import added for renames are not in the source and must not be deprecated for that.
    static func isAddedAlias(_ recordName: String) -> Bool { recordName.contains("_renamed_") }

    /// The record an alias-like record names (`stadium` of a StadiumAlias, `team` of a TeamAlias).
    static func aliasOwner(_ record: RecordDraft) -> String? {
        switch record.recordType {
        case "StadiumAlias": record.fields["stadium"]?.value["recordName"]?.stringValue
        case "TeamAlias": record.fields["team"]?.value["recordName"]?.stringValue
        default: nil
        }
    }

    /// An alias for a name the source dropped: valid until the import that saw the rename.
    static func alias(for record: RecordDraft, oldName: String, until now: Int64) -> RecordDraft {
        let isStadium = record.recordType == "Stadium"
        let digest = SHA256.hash(data: Array((record.recordName + "|" + oldName).utf8)).prefix(6).hexString
        let id = (isStadium ? "stadium_alias_" : "team_alias_") + record.recordName.split(separator: "_", maxSplits: 1).last! + "_renamed_" + digest
        var fields: [String: FieldValue] = [
            "canonicalId": .string(id), "uuid": .string(CanonicalID.uuid(for: id).uuidString),
            (isStadium ? "stadium" : "team"): .reference(record.recordName), "name": .string(oldName),
            "validUntil": FieldValue(type: .timestamp, value: .int(now)),
        ]
        if !isStadium, let city = record.fields["city"] { fields["city"] = city }
        return RecordDraft(recordName: id, recordType: isStadium ? "StadiumAlias" : "TeamAlias", fields: fields)
    }

    /// One line per change, for `--dry-run` and the import log.
    public var report: [String] {
        self.changes.map { change in
            switch change {
            case .created(let name, let type): "+ \(type) \(name)"
            case .updated(let name, let type, let fields): "~ \(type) \(name): \(fields.joined(separator: ", "))"
            case .deprecated(let name, let type): "- \(type) \(name) deprecated (missing from the source)"
            case .aliasAdded(let name, let owner, let oldName): "+ alias \(name) keeps the old name \"\(oldName)\" of \(owner)"
            }
        }
    }
}
