import CloudCore
import CloudPostgres
import Logging

/// `changes/wait` (extension): a long poll on change tokens. It answers at once when something changed after the
/// client's tokens, otherwise when something does, or with `changed: false` after `timeout` seconds.
extension DatabaseController {
    @Sendable func waitForChanges(_ call: DatabaseCall) async throws -> WireWriter {
        let token = try call.body.string("syncToken")
        let zones = try call.body.objects("zones")
        let position: WaitPosition
        switch (token, zones) {
        case (_, nil):
            position = .database(syncToken: token)
        case (nil, let zones?):
            guard !zones.isEmpty, zones.count <= self.records.limits.maxOperations else {
                throw CloudError.badRequest("zones must list 1 to \(self.records.limits.maxOperations) zones")
            }
            position = .zones(try zones.map { (try self.zone($0, in: call), try $0.string("syncToken")) })
        case (_?, _?):
            throw CloudError.badRequest("give either syncToken (a database token) or zones (zone tokens), not both")
        }
        let timeout = try self.waitTimeout(call.body, key: "timeout", default: 30)
        let changed = try await self.waitForChanges(in: [call.database], account: call.caller.account?.id, timeout: timeout, logger: call.logger) {
            try await self.records.pendingChanges(after: position, in: call.database, logger: call.logger)
        }
        var writer = WireWriter()
        writer.object { writer in
            writer.json.key("changed"); writer.json.bool(!changed.isEmpty)
            if case .zones = position {
                writer.list("zones") { writer in
                    for zone in changed {
                        writer.object { writer in
                            writer.json.key("zoneID"); writer.zoneID(zone, owner: call.database.ownerRecordName)
                        }
                    }
                }
            }
        }
        return writer
    }

    /// The wait a client asked for, in whole seconds from 0 to the configured maximum.
    func waitTimeout(_ body: WireObject, key: String, default seconds: Int) throws -> Duration {
        let maximum = self.configuration.live.maxWaitSeconds
        let asked = try body.int(key) ?? min(seconds, maximum)
        guard (0...maximum).contains(asked) else { throw CloudError.badRequest("\(body.name(key)) must be 0 to \(maximum) seconds") }
        return .seconds(asked)
    }

    /// Runs `check` until it finds something or `timeout` passes, waiting for a change to `databases` in between.
    /// The waiter registers before each check, so a change that commits during the check wakes it: none is missed.
    /// Checks run under the database deadline; the wait itself costs no query.
    func waitForChanges<Found: Collection & Sendable>(
        in databases: [DatabaseRef], account: Int64?, timeout: Duration, logger: Logger, _ check: @escaping @Sendable () async throws -> Found
    ) async throws -> Found {
        let feed = self.records.changes.feed
        let until = self.clock.now + timeout.milliseconds
        while true {
            let waiter = try feed.register(databases: databases.map(\.id), account: account)
            let found: Found
            do {
                found = try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.clock, check)
            } catch {
                waiter.end()
                throw error
            }
            let left = until - self.clock.now
            guard found.isEmpty, left > 0 else {
                waiter.end()
                return found
            }
            guard await waiter.wait(timeout: .milliseconds(left), clock: self.clock) else { return found }
        }
    }
}
