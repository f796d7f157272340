import CloudRuntime
import Logging
import Synchronization

/// Keeps every log line, with its metadata, to search for secrets.
struct LogCapture: LogHandler {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        /// Changed after every line, for tests that wait for one.
        let changes = StateSignal()
        var text: String { self.lines.withLock { $0.joined(separator: "\n") } }
    }

    let storage = Lines()
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var text: String { self.storage.text }

    func log(event: LogEvent) {
        let metadata = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
        self.storage.lines.withLock { $0.append("\(event.message) \(metadata)") }
        self.storage.changes.changed()
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }
}
