import CloudCore
import CloudPostgres
import CloudRuntime
import Logging
import Metrics

/// `changes/wait` (extension): a long poll on change tokens. It answers at once when something changed after the
/// client's tokens, otherwise when something does, or with `changed: false` after `timeout` seconds.
extension DatabaseController {
    @Sendable func waitForChanges(_ call: DatabaseCall) async throws -> WireWriter {
        let token = try call.body.string("syncToken")
        let zones = try call.body.objects("zones")
        // A wait on nothing would answer "changed" at once, every time: a device whose body was lost would sync in a
        // loop. A first wait without a database token names the public zones it follows (`[]` for none).
        guard token != nil || zones != nil || call.body["publicZones"] != nil else {
            throw CloudError.badRequest("changes/wait needs syncToken (a database token), zones (zone tokens) or publicZones")
        }
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
        let timeout = try self.waitTimeout(asked: call.body.int("timeout"), default: 30)
        let publicPosition = try await self.publicWaitPosition(call)
        let databases = [call.database.id] + (publicPosition.map { [$0.database.id] } ?? [])
        let changed = try await self.waitForChanges(
            in: databases, account: call.caller.account?.id, timeout: timeout, isEmpty: { $0.own.isEmpty && $0.public.isEmpty }
        ) { () async throws -> (own: [String], public: [String]) in
            let own = try await self.records.pendingChanges(after: position, in: call.database, logger: call.logger)
            guard let publicPosition else { return (own: own, public: [String]()) }
            return (
                own: own,
                public: try await self.records.pendingChanges(after: .zones(publicPosition.zones), in: publicPosition.database, logger: call.logger)
            )
        }
        var writer = WireWriter()
        writer.object { writer in
            writer.json.key("changed"); writer.json.bool(!changed.own.isEmpty || !changed.public.isEmpty)
            writer.zoneIDs("zones", changed.own, owner: call.database.ownerRecordName)
            if publicPosition != nil { writer.zoneIDs("publicZones", changed.public, owner: "_defaultOwner") }
        }
        return writer
    }

    /// Extension of the extension, `publicZones`: a device waits on its private database and the public zones it
    /// follows with one request (one waiter, one connection), instead of two long polls of which one is always
    /// abandoned when the other answers.
    func publicWaitPosition(_ call: DatabaseCall) async throws -> (database: DatabaseRef, zones: [(name: String, syncToken: String?)])? {
        guard let entries = try call.body.objects("publicZones") else { return nil }
        guard call.database.scope == .private else { throw CloudError.badRequest("publicZones is for a wait on the private database") }
        guard entries.count <= self.records.limits.maxOperations else {
            throw CloudError.badRequest("publicZones may list at most \(self.records.limits.maxOperations) zones")
        }
        let zones = try entries.map { (name: try $0.zoneName().name, syncToken: try $0.string("syncToken")) }
        let database = try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.clock) {
            try await self.records.database(container: call.container, environment: call.environment, scope: .public, owner: nil, logger: call.logger)
        }
        return (database, zones)
    }

    /// The wait a client asked for (`asked` seconds, else `seconds`), from 0 to the configured maximum: the one
    /// rule of `changes/wait` and the web courier.
    func waitTimeout(asked: Int?, default seconds: Int) throws -> Duration {
        let maximum = self.configuration.live.maxWaitSeconds
        let wait = asked ?? min(seconds, maximum)
        guard (0...maximum).contains(wait) else { throw CloudError.badRequest("timeout must be 0 to \(maximum) seconds") }
        return .seconds(wait)
    }

    /// Runs `check` until it finds something or `timeout` passes, waiting for a change to `databases` in between.
    /// The waiter registers before each check, so a change that commits during the check wakes it: none is missed.
    /// Checks run under the database deadline; the wait itself costs no query.
    func waitForChanges<Found: Sendable>(
        in databases: [Int64], account: Int64?, timeout: Duration, isEmpty: (Found) -> Bool,
        _ check: @escaping @Sendable () async throws -> Found
    ) async throws -> Found {
        let feed = self.records.changes.feed
        let gauge = Gauge(label: "stadiumcloud_waiting_requests")
        defer { gauge.record(feed.waiting) }
        let until = self.clock.now + timeout.milliseconds
        while true {
            let waiter = try feed.register(databases: databases, account: account)
            gauge.record(feed.waiting)
            let found: Found
            do {
                found = try await withDatabaseDeadline(self.configuration.databaseTimeout, clock: self.clock, check)
            } catch {
                waiter.end()
                throw error
            }
            let left = until - self.clock.now
            guard isEmpty(found), left > 0 else {
                waiter.end()
                return found
            }
            guard await waiter.wait(timeout: .milliseconds(left), clock: self.clock) else { return found }
        }
    }
}

extension WireWriter {
    /// `"key": [{"zoneID": …}, …]`.
    mutating func zoneIDs(_ key: String, _ zones: [String], owner: String) {
        self.list(key) { writer in
            for zone in zones {
                writer.object { writer in
                    writer.json.key("zoneID"); writer.zoneID(zone, owner: owner)
                }
            }
        }
    }
}
