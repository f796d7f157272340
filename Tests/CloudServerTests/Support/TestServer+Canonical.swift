import Canon
import CloudCore
import CloudHTTP
import CloudPostgres
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

    /// Runs `body` with a server whose public database holds `dataset` (the schema applied, then imported).
    static func runImported(_ dataset: CanonicalDataset, _ body: @Sendable @escaping (TestServer) async throws -> Void) async throws {
        try await TestServer.run { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            _ = try await server.importer.run(dataset, container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            try await body(server)
        }
    }

    func publicToken() async throws -> String {
        try await self.call("zones/list", database: "public").json["zones"]![0]!["syncToken"]!.stringValue!
    }
}
