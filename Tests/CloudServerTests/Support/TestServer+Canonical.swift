import Canon
import CloudCore
import Foundation

/// The repository's schema and canonical dataset, loaded once.
enum CanonicalFixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let schema = Result {
        try Schema.parse(Array(FileManager.default.contents(atPath: root.appendingPathComponent("Resources/schema.json").path)!))
    }
    static let dataset = Result { try CanonicalDataset.load(from: root.appendingPathComponent("Resources/canonical").path, gameSeasons: []) }
}

/// The canonical import and the public database's change token.
extension TestServer {
    var importer: CanonicalImporter { CanonicalImporter(records: self.dependencies.records, logger: TestDatabase.logger) }

    func publicToken() async throws -> String {
        try await self.call("zones/list", database: "public").json["zones"]![0]!["syncToken"]!.stringValue!
    }
}
