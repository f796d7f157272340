import CloudPostgres
import Foundation
import Hummingbird
import Logging
import PostgresNIO

/// The floor the hot path is measured against: the same HTTP stack (Hummingbird) and database pool
/// (`PostgresPool.reading`, as the empty poll) as the server, answering `POST /floor` with one `SELECT 1` and a tiny
/// JSON body.
@main struct Floor {
    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let database = environment["BENCH_DATABASE_URL"], let port = Int(environment["BENCH_FLOOR_PORT"] ?? "") else {
            print("run bench/hotpath.sh, which sets BENCH_DATABASE_URL and BENCH_FLOOR_PORT")
            return
        }
        let logger = {
            var logger = Logger(label: "floor")
            logger.logLevel = .warning
            return logger
        }()
        try await withDatabasePool(try DatabaseURL(database), logger: logger) { pool in
            let router = Router()
            let body = ByteBuffer(string: #"{"ok":1}"#)
            router.post("/floor") { _, _ -> Response in
                try await pool.reading { connection in
                    for try await _ in try await connection.query("SELECT 1", logger: logger).decode(Int32.self) {}
                }
                return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: body))
            }
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)), logger: logger)
            try await app.runService()
        }
    }
}
