import CloudHTTP
import Testing

/// What `serve` keeps and says under the open-file limit (docs/RELIABILITY.md, "Connections"): one descriptor a
/// connection and a reserve beside them; a limit below that lowers the connection cap, and the operator is told.
@Suite struct OpenFileLimitTests {
    static func limits(maximum: Int) -> ConnectionLimits {
        var limits = ConnectionLimits()
        limits.maximum = maximum
        return limits
    }

    @Test func aLimitWithRoomForEveryConnectionKeepsThemAllAndWarnsOfNothing() {
        let limits = Self.limits(maximum: 10_000)
        #expect(limits.openFilesNeeded == 10_128)
        #expect(limits.maximum(underOpenFileLimit: 10_128) == 10_000)
        #expect(limits.openFileLimitWarning(limit: 10_128) == nil)
        #expect(limits.openFileLimitWarning(limit: 1_048_576) == nil)
        #expect(Self.limits(maximum: 300).openFileLimitWarning(limit: 1024) == nil)
    }

    @Test func aLimitTooLowForMaxConnectionsLowersTheCapAndSaysWhatToDo() throws {
        let limits = Self.limits(maximum: 10_000)
        #expect(limits.maximum(underOpenFileLimit: 1024) == 896)
        let warning = try #require(limits.openFileLimitWarning(limit: 1024))
        #expect(warning.contains("open-file limit (1024"), "\(warning)")
        #expect(warning.contains("10128 descriptors --max-connections 10000 needs"), "\(warning)")
        #expect(warning.contains("at most 896 connections are kept"), "\(warning)")
        #expect(warning.contains("LimitNOFILE") && warning.contains("ulimit -Hn") && warning.contains("lower --max-connections"), "\(warning)")
        // One descriptor short is short.
        #expect(limits.openFileLimitWarning(limit: 10_127) != nil)
        #expect(limits.maximum(underOpenFileLimit: 10_127) == 9_999)
    }

    @Test func aLimitTooSmallForTheReserveKeepsHalfOfItForConnections() {
        let limits = Self.limits(maximum: 300)
        #expect(limits.maximum(underOpenFileLimit: 200) == 100)
        #expect(limits.openFileLimitWarning(limit: 200)?.contains("at most 100 connections are kept") == true)
    }
}
