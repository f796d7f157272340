import CloudCore
@testable import CloudSync
import Foundation
import Synchronization
import Testing

/// The device's sync loop without a server: outbox delivery exactly once and paging, through `ScriptedServer`.
@Suite struct SyncEngineTests {
    /// A signed-in device on a fresh SQLite store, talking to `server`; calls are not retried within a sync.
    static func device(_ server: ScriptedServer, pageSize: Int = 200) throws -> (engine: SyncEngine, store: LocalStore, folder: String) {
        let folder = NSTemporaryDirectory() + "stadiumcloud-sync-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let store = try LocalStore(path: folder + "/device.sqlite")
        try store.setWebAuthToken("web-auth-token")
        let service = CloudKitWebService(
            endpoint: ScriptedServer.endpoint, transport: server, tokens: store, deviceID: "test-device", retry: RetryPolicy(attempts: 1))
        var configuration = SyncConfiguration()
        configuration.pageSize = pageSize
        configuration.publicZones = []
        return (SyncEngine(service: service, store: store, configuration: configuration), store, folder)
    }

    @Test func anAnswerLostAfterTheWriteIsResentWithTheSameKeyAndBytesAndAppliedOnce() async throws {
        let server = ScriptedServer()
        let device = try Self.device(server)
        defer { try? FileManager.default.removeItem(atPath: device.folder) }
        _ = try device.store.save("v1", type: "Visit", fields: ["notes": FieldValue(type: .string, value: "first")])
        _ = try device.store.save("v2", type: "Visit", fields: ["notes": FieldValue(type: .string, value: "second")])
        server.state.withLock { $0.loseModifyAnswers = 1 }

        await #expect(throws: (any Error).self) { _ = try await device.engine.sync() }
        #expect(try device.store.pendingCounts().waiting == 2, "the edits stay queued until an answer arrives")
        let report = try await device.engine.sync()
        #expect(report.waiting == 0)
        let sends = server.requests("records/modify")
        #expect(sends.count == 2)
        #expect(sends[0].idempotencyKey != nil)
        #expect(sends[1].idempotencyKey == sends[0].idempotencyKey, "a resent batch keeps its key")
        #expect(sends[1].bodyBytes == sends[0].bodyBytes, "and its bytes")
        #expect(server.state.withLock { $0.seq } == 2, "written once")
        #expect(try device.store.record("v1", scope: .private)?.changeTag == "t1")
    }

    @Test func pagesAreFetchedUntilNoMoreAreComingAndTheTokenCarriesOn() async throws {
        let server = ScriptedServer()
        for index in 0..<7 { server.put("r\(index)", fields: ["n": ["type": "INT64", "value": .int(Int64(index))]]) }
        let device = try Self.device(server, pageSize: 3)
        defer { try? FileManager.default.removeItem(atPath: device.folder) }

        let first = try await device.engine.sync()
        #expect(first.fetched == 7)
        #expect(server.requests("changes/zone").count == 3, "pages of 3, 3 and 1")
        #expect(try device.store.records(ofType: "Visit", scope: .private).count == 7)

        server.put("r7")
        let second = try await device.engine.sync()
        #expect(second.fetched == 1, "only what changed since the saved token")
        #expect(server.requests("changes/zone").last?.body["zones"]?[0]?["syncToken"] == "7")
    }
}
