import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Logging
import SportsDomain
import Synchronization

/// The operator console's import and edits of canonical data: the same `CanonicalImporter` as
/// `stadiumcloud import`, and edits merged by `CanonicalImportPlan`, so a rename in the console keeps the old name as
/// an alias exactly as an import does.
public struct CanonicalEditor: PublicDataEditor {
    let records: RecordStore
    public let defaultDatasetPath: String

    public init(records: RecordStore, defaultDatasetPath: String = "Resources/canonical") {
        self.records = records
        self.defaultDatasetPath = defaultDatasetPath
    }

    public func importDataset(
        at path: String, into scope: SchemaScope, dryRun: Bool, logger: Logger, progress: @escaping @Sendable (Int, Int, String) -> Void
    ) async throws -> PublicDataChanges {
        // Reading the folder, reading the stored records, comparing, writing.
        let steps = 4
        progress(0, steps, "reading \(path)")
        do {
            let dataset = try CanonicalDataset.load(from: path)
            let done = Mutex(1)
            progress(1, steps, "read the dataset")
            let outcome = try await CanonicalImporter(records: self.records, logger: logger).run(
                dataset, container: scope.container, environment: scope.environment, dryRun: dryRun
            ) { message in
                let step = done.withLock { count in
                    count = min(count + 1, steps - 1)
                    return count
                }
                progress(step, steps, message)
            }
            progress(steps, steps, dryRun ? "dry run: nothing written" : "applied")
            return Self.changes(outcome.changes, report: outcome.report)
        } catch let error as CanonError {
            return PublicDataChanges(refused: [error.description])
        } catch let error as CloudError {
            return PublicDataChanges(refused: [error.reason])
        }
    }

    public func edit(
        recordName: String, zone: String, field: String, value: String, in scope: SchemaScope, by operatorName: String, dryRun: Bool,
        logger: Logger
    ) async throws -> PublicDataChanges {
        guard let schema = try await self.records.deployedSchema(in: scope, logger: logger) else {
            return PublicDataChanges(refused: ["no schema is deployed to \(scope)"])
        }
        let database = try await self.records.database(
            container: scope.container, environment: scope.environment, scope: .public, owner: nil, logger: logger)
        let now = self.records.clock.now
        let stamp = ChangeStamp(timestamp: now, userRecordName: "_canonicalImport", deviceID: "console " + operatorName)
        let plan = Mutex<CanonicalImportPlan?>(nil)
        do {
            try await self.records.rewriteZones([zone], in: database, stamp: stamp, commit: !dryRun, logger: logger) { stored in
                let zoneRecords = stored[zone] ?? [:]
                guard let record = zoneRecords[recordName], !record.deleted else {
                    throw CanonError("\(zone) has no live record \(recordName)")
                }
                guard let declared = schema.recordTypes[record.recordType]?.fields[field], declared.owner == .system else {
                    throw CanonError("\(field) is not a system field of \(record.recordType): the console edits system fields only")
                }
                var fields = record.fields
                fields[field] = try Self.fieldValue(value, type: declared.fieldType, field: field)
                if record.recordType == "Game" { fields[Game.pinnedFieldsField] = Self.pinning(field, in: fields) }
                // The record's aliases go in too, so the merge knows which old names already have one (it adds an
                // alias for a name that has none). An alias still open for the old name ends now: a rename here has
                // no dataset that would date it.
                let aliases = zoneRecords.values.filter { alias in
                    !alias.deleted && CanonicalImportPlan.aliasOwner(Self.draft(alias)) == recordName
                }
                let oldName = record.fields["name"]?.value.stringValue
                let sourceAliases = aliases.map { alias in
                    var draft = Self.draft(alias)
                    if field == "name", fields["name"] != record.fields["name"], draft.fields["name"]?.value.stringValue == oldName,
                        draft.fields["validUntil"] == nil
                    {
                        draft.fields["validUntil"] = FieldValue(type: .timestamp, value: .int(now))
                    }
                    return draft
                }
                let computed = try CanonicalImportPlan(
                    source: [RecordDraft(recordName: recordName, recordType: record.recordType, fields: fields)] + sourceAliases,
                    stored: Dictionary(uniqueKeysWithValues: ([record] + aliases).map { ($0.recordName, $0) }), schema: schema, now: now,
                    byHand: true)
                plan.withLock { $0 = computed }
                return [zone: computed.drafts]
            }
        } catch let error as CanonError {
            return PublicDataChanges(refused: [error.description])
        } catch let error as CloudError {
            return PublicDataChanges(refused: [error.reason])
        }
        guard let plan = plan.withLock({ $0 }) else { return PublicDataChanges() }
        if !dryRun {
            logger.notice(
                "an operator edited a public record", metadata: ["operator": "\(operatorName)", "record": "\(recordName)", "field": "\(field)"])
        }
        return Self.changes(plan.changes, report: plan.report)
    }

    /// The typed value of what an operator typed into a field of `type`.
    static func fieldValue(_ text: String, type: FieldType?, field: String) throws -> FieldValue {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { throw CanonError("\(field) needs a value") }
        switch type {
        case .string?: return .string(text)
        case .int64?:
            guard let number = Int64(text) else { throw CanonError("\(field) takes a whole number") }
            return FieldValue(type: .int64, value: .int(number))
        case .double?:
            guard let number = Double(text), number.isFinite else { throw CanonError("\(field) takes a number") }
            return FieldValue(type: .double, value: .double(number))
        case .timestamp?:
            return FieldValue(type: .timestamp, value: .int(try CanonicalDate.milliseconds(text)))
        default:
            throw CanonError("\(field) is not a text, number or date field; change it in the dataset and import it")
        }
    }

    /// A game's pinned fields with `field` added: a correction by hand that no feed or import undoes.
    static func pinning(_ field: String, in fields: [String: FieldValue]) -> FieldValue {
        let pinned = Set(fields[Game.pinnedFieldsField]?.value.arrayValue?.compactMap(\.stringValue) ?? []).union([field])
        return FieldValue(type: .stringList, value: .array(pinned.sorted().map(JSONValue.string)))
    }

    static func draft(_ record: Record) -> RecordDraft {
        RecordDraft(recordName: record.recordName, recordType: record.recordType, fields: record.fields)
    }

    static func changes(_ changes: [CanonicalImportPlan.Change], report: [String]) -> PublicDataChanges {
        var counts: [String: Int] = [:]
        for change in changes {
            let kind =
                switch change {
                case .created: "created"
                case .updated: "updated"
                case .deprecated: "deprecated"
                case .aliasAdded: "alias added"
                }
            counts[kind, default: 0] += 1
        }
        return PublicDataChanges(lines: report, counts: counts)
    }
}
