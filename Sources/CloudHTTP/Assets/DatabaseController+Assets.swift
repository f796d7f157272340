import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation

/// `assets/upload` and `assets/rereference`; the bytes themselves go through `AssetController` (docs/ASSETS.md).
extension DatabaseController {
    /// `assets/upload`: an upload URL per token; a token without a `fieldName` fails alone.
    @Sendable func requestUploads(_ call: DatabaseCall) async throws -> WireWriter {
        let tokens = try call.body.entries("tokens") { token in
            guard let fieldName = try token.string("fieldName") else { throw CloudError.badRequest("\(token.name("fieldName")) is required") }
            return (recordName: try token.string("recordName") ?? UUID().uuidString, fieldName: fieldName)
        }
        guard let tokens, !tokens.isEmpty else { throw CloudError.badRequest("tokens is required") }
        guard tokens.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("at most \(self.records.limits.maxOperations) tokens per request")
        }
        let owner = assetOwner(call.database)
        let lifetime = self.configuration.uploadURLLifetimeSeconds
        var writer = WireWriter()
        writer.object { writer in
            writer.list("tokens") { writer in
                for (raw, token) in tokens {
                    switch token {
                    case .failure(let error):
                        writer.itemError(error, key: "recordName", name: raw["recordName"]?.stringValue ?? "")
                    case .success(let token):
                        // Named after its owner, so erasing the account finds its uploads in progress.
                        let upload = owner + "-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
                        let signature = self.capabilities.sign(.upload, owner: owner, validFor: lifetime, subject: upload)
                        writer.json.value([
                            "recordName": .string(token.recordName), "fieldName": .string(token.fieldName),
                            "url": .string("\(call.baseURL)/assets/upload/\(upload)?c=\(signature)"),
                        ])
                    }
                }
            }
        }
        return writer
    }

    /// `assets/rereference`: fresh receipts for assets records already hold, to put them in other records.
    @Sendable func rereference(_ call: DatabaseCall) async throws -> WireWriter {
        let entries = try call.body.entries("assets") { entry in
            guard let name = try entry.string("recordName"), let field = try entry.string("fieldName") else {
                throw CloudError.badRequest("\(entry.path) needs recordName and fieldName")
            }
            return (name: name, field: field)
        }
        guard let entries, !entries.isEmpty else { throw CloudError.badRequest("assets is required") }
        guard entries.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("at most \(self.records.limits.maxOperations) assets per request")
        }
        let zone = try self.zone(call.body, in: call)
        let wanted = readable(entries)
        let fields = Array(Set(wanted.map(\.field)))
        let found = try await self.records.lookup(wanted.map { ($0.name, fields) }, zoneName: zone, in: call.database, logger: call.logger)
        let owner = assetOwner(call.database)
        let lifetime = self.configuration.receiptLifetimeSeconds
        var writer = WireWriter()
        try writer.object { writer in
            try writer.list("assets") { writer in
                for (raw, answer) in answered(entries, found) {
                    guard case .success(let ((name, field), record)) = answer else {
                        if case .failure(let error) = answer {
                            writer.itemError(error, key: "recordName", name: raw["recordName"]?.stringValue ?? "")
                        }
                        continue
                    }
                    guard let record,
                        let stored = try JSONValue.parse(Array(record.fieldsJSON.utf8))[field].flatMap(FieldValue.init(stored:)),
                        stored.type == .asset, let checksum = stored.value["fileChecksum"]?.stringValue, let size = stored.value["size"]?.int64Value
                    else {
                        writer.itemError(.notFound("record \(name) has no asset in \(field)"), key: "recordName", name: name)
                        continue
                    }
                    writer.json.value([
                        "recordName": .string(name), "fieldName": .string(field), "fileChecksum": .string(checksum), "size": .int(size),
                        "receipt": .string(self.capabilities.sign(.receipt, owner: owner, validFor: lifetime, size: size, subject: checksum)),
                    ])
                }
            }
        }
        return writer
    }

    /// A receipt sent with an asset must be this database's, unexpired and of that size; the store then checks,
    /// under the write lock, that the database has the asset (docs/ASSETS.md). An operation failing this is refused.
    func checkReceipts(in operations: inout [RecordOperation], database: DatabaseRef) {
        let owner = assetOwner(database)
        func assets(in value: JSONValue) -> [[String: JSONValue]] {
            switch value {
            case .object(let object) where object["fileChecksum"] != nil: [object]
            case .object(let object): object.values.flatMap(assets)
            case .array(let items): items.flatMap(assets)
            default: []
            }
        }
        func refusal(of operation: RecordOperation) -> CloudError? {
            for asset in operation.fields.map({ assets(in: .object($0)) }) ?? [] {
                guard let receipt = asset["receipt"]?.stringValue else { continue }
                guard let grant = self.capabilities.verify(.receipt, receipt), grant.owner == owner,
                    grant.subject == asset["fileChecksum"]?.stringValue
                else { return .badRequest("record \(operation.recordName): the asset receipt is not valid for this database") }
                guard grant.expires > self.clock.now else {
                    return .badRequest("record \(operation.recordName): the asset receipt has expired; upload the asset again")
                }
                if let size = asset["size"]?.int64Value, size != grant.size {
                    return .badRequest("record \(operation.recordName): the asset size does not match its receipt")
                }
            }
            return nil
        }
        for index in operations.indices where operations[index].refusal == nil {
            operations[index].refusal = refusal(of: operations[index])
        }
    }
}
