#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Logging

/// The process's open-file limit. Distributions start services with a soft limit of 1,024 and a much higher hard one:
/// every connection, PostgreSQL connection and asset being written holds a descriptor, so `serve` raises the soft limit
/// to the hard one, and keeps the connection bound below what is left.
enum OpenFiles {
    /// Descriptors kept for PostgreSQL connections, asset files, logs and the listening socket.
    static let reserve: rlim_t = 128

    /// Raises the soft limit to the hard one and returns how many connections to keep: `connections`, or fewer when
    /// the limit leaves no room for them.
    static func raiseLimit(connections: Int, logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return connections }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let room = Int(clamping: limit.rlim_cur > Self.reserve * 2 ? limit.rlim_cur - Self.reserve : limit.rlim_cur / 2)
        if room < connections {
            logger.warning(
                "the open-file limit (\(limit.rlim_cur)) leaves room for \(room) connections, not --max-connections \(connections); raise it (LimitNOFILE=, ulimit -n)")
        }
        return min(connections, room)
    }
}
