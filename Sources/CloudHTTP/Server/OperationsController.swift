import CloudAssets
import CloudCore
import CloudPostgres
import CloudRuntime
import Foundation
import Hummingbird
import Logging
import Metrics
import Prometheus

/// `/health` (the process is up), `/ready` (database reachable, migrations current; a full asset store is reported
/// but keeps the process ready: every process shares the store, and reads go on), `/metrics` (Prometheus) and
/// `/openapi.yaml` (the API description).
struct OperationsController: Sendable {
    let dependencies: ServerDependencies

    func addRoutes(to router: Router<CloudRequestContext>) {
        router.get("health") { _, _ in Self.json(["status": "ok"]) }
        router.get("ready") { _, context in
            do {
                let (records, migrations, logger) = (self.dependencies.records, self.dependencies.migrations, context.logger)
                // A probe must answer quickly, database or not.
                let pending = try await withDatabaseDeadline(.seconds(2)) {
                    try await records.pendingMigrations(migrations, logger: logger)
                }
                guard pending.isEmpty else {
                    return Self.json(
                        ["status": "migrations pending", "pending": .array(pending.map { .int(Int64($0.version)) })], status: .serviceUnavailable)
                }
                var answer: [String: JSONValue] = ["status": "ready"]
                if self.dependencies.assets.isFull { answer["assetStore"] = "full" }
                return Self.json(.object(answer))
            } catch {
                context.logger.warning("readiness check failed: \(String(reflecting: error))")
                var answer: [String: JSONValue] = ["status": "database unavailable"]
                if let outage = self.dependencies.records.databaseOutage {
                    // The driver's error names hosts and ports: the log and the operator console show it, not this
                    // public answer.
                    answer["reason"] = .string("PostgreSQL does not answer; the server's log says why")
                    answer["since"] = .int(outage.since)
                } else {
                    answer["reason"] = .string("the database did not answer within 2 s")
                }
                return Self.json(.object(answer), status: .serviceUnavailable)
            }
        }
        router.get("openapi.yaml") { _, _ in
            guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml"),
                let spec = FileManager.default.contents(atPath: url.path)
            else {
                throw CloudError.notFound("openapi.yaml is not installed next to the server binary")
            }
            return Response(status: .ok, headers: [.contentType: "application/yaml"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: spec)))
        }
        router.get("metrics") { _, _ in
            Gauge(label: "stadiumcloud_asset_store_full").record(self.dependencies.assets.isFull ? 1 : 0)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.dependencies.metrics.emitToBuffer())))
        }
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: JSONWriter.encode(value))))
    }
}
