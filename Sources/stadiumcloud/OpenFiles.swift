#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import CloudHTTP
import Logging

/// The process's open-file limit. Distributions start services with a soft limit of 1,024 and a much higher hard one:
/// every connection, PostgreSQL connection and asset being written holds a descriptor, so `serve` raises the soft limit
/// to the hard one, and keeps the connection bound below what is left.
enum OpenFiles {
    /// Raises the soft limit to the hard one and returns `connections` with `maximum` lowered to what the limit leaves
    /// room for, warning when that is below what the operator asked for.
    static func raiseLimit(_ connections: ConnectionLimits, logger: Logger) -> ConnectionLimits {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return connections }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let inForce = Int(clamping: limit.rlim_cur)
        if let warning = connections.openFileLimitWarning(limit: inForce) { logger.warning("\(warning)") }
        var lowered = connections
        lowered.maximum = connections.maximum(underOpenFileLimit: inForce)
        return lowered
    }
}
