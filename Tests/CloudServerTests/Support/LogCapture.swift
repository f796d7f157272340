import Logging
import Synchronization

/// Keeps every log line, with its metadata, to search for secrets.
struct LogCapture: LogHandler {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var text: String { self.lines.withLock { $0.joined(separator: "\n") } }
    }

    let storage = Lines()
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var text: String { self.storage.text }

    func log(event: LogEvent) {
        let metadata = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
        self.storage.lines.withLock { $0.append("\(event.message) \(metadata)") }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }
}
