import CloudCore
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite(.bounded) struct OperationsTests {
    @Test func healthReadyAndMetrics() async throws {
        try await TestServer.run { server in
            #expect(try await server.client.execute(uri: "/health", method: .get) { $0.status.code } == 200)
            let ready = try await server.client.execute(uri: "/ready", method: .get) { String(buffer: $0.body) }
            #expect(ready.contains("ready"))
            let metrics = try await server.client.execute(uri: "/metrics", method: .get) { $0.status.code }
            #expect(metrics == 200)
            let spec = try await server.client.execute(uri: "/openapi.yaml", method: .get) { String(buffer: $0.body) }
            #expect(spec.hasPrefix("openapi: 3.0") || spec.contains("\nopenapi: 3.0"))
            #expect(spec.contains("/database/1/{container}/{environment}/{database}/records/modify"))
        }
    }

    @Test func unknownEndpointsAndUnsupportedFeaturesAnswerInCloudKitShape() async throws {
        try await TestServer.run { server in
            let unknown = try await server.client.execute(uri: "/nope", method: .get) { $0 }
            #expect(unknown.status.code == 404)
            #expect(String(buffer: unknown.body).contains("\"serverErrorCode\":\"NOT_FOUND\""))
            let shared = try await server.call("zones/list", database: "shared", as: server.alice)
            #expect(shared.errorCode == "BAD_REQUEST")
            let sharing = try await server.call("records/resolve", database: "private", as: server.alice)
            #expect(sharing.errorCode == "BAD_REQUEST")
            let badEnvironment = try await server.client.execute(
                uri: "/database/1/c/staging/public/zones/list?ckAPIToken=\(server.apiToken)", method: .get
            ) { $0.status.code }
            #expect(badEnvironment == 400)
        }
    }
}
