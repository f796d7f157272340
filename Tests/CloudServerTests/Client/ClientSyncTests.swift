import Canon
import CloudCore
import CloudHTTP
import CloudPostgres
import CloudRuntime
@testable import CloudSync
import Foundation
import HummingbirdTesting
import SportsDomain
import StadiumCloudClient
import Synchronization
import Testing

/// The client SDK against a real server: two devices of one account, each with its own SQLite store.
@Suite(.bounded) struct ClientSyncTests {
    static let password = "correct horse battery staple"

    /// A server with the SportsTime schema and Alice's password; `folder` holds the devices' stores.
    static func run(_ body: @Sendable (TestServer, String) async throws -> Void) async throws {
        try await TestServer.run(.live) { server in
            try await server.dependencies.records.applySchema(
                try CanonicalFixtures.schema.get(), to: TestServer.development, logger: TestDatabase.logger)
            _ = try await server.dependencies.credentials.setPassword(accountName: "alice", password: Self.password, logger: TestDatabase.logger)
            let folder = NSTemporaryDirectory() + "stadiumcloud-client-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: folder) }
            try await body(server, folder)
        }
    }

    /// A device of Alice's, signed in on first open. Between tries it waits for nothing, or moves `clock` on.
    static func device(
        _ server: TestServer, _ folder: String, _ name: String, account: String = "alice", transport: any HTTPTransport = URLSessionTransport(),
        configuration: SyncConfiguration = SyncConfiguration(), clock: ManualClock? = nil
    ) async throws -> StadiumCloudClient {
        let port = try #require(server.client.port)
        let client = try StadiumCloudClient(
            storePath: "\(folder)/\(name).sqlite",
            endpoint: ServerEndpoint(
                baseURL: URL(string: "http://127.0.0.1:\(port)")!, container: "iCloud.com.sportstime.test", apiToken: server.apiToken),
            transport: transport, retry: RetryPolicy(attempts: 3, firstDelay: .milliseconds(20)) { clock?.advance(by: $0) },
            configuration: configuration)
        if !client.isSignedIn { try await client.signIn(accountName: account, password: Self.password) }
        return client
    }

    /// Alice's visits as the server has them.
    static func serverVisits(_ server: TestServer) async throws -> [JSONValue] {
        try await server.call("records/query", ["query": ["recordType": "StadiumVisit"]], as: server.alice).records
    }

    @Test func aVisitAddedOnOneDeviceAppearsOnTheOther() async throws {
        try await Self.run { server, folder in
            let phone = try await Self.device(server, folder, "phone")
            let tablet = try await Self.device(server, folder, "tablet")
            let visit = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_717_243_200_000, notes: "garlic fries")
            #expect(try phone.visits().map(\.isSynced) == [false])
            let sent = try await phone.sync()
            #expect(sent.sent == 1 && sent.waiting == 0)
            #expect(try phone.visits().map(\.isSynced) == [true])
            #expect(try await Self.serverVisits(server).count == 1)

            let fetched = try await tablet.sync()
            #expect(fetched.fetched == 1)
            #expect(try tablet.visits().map(\.notes) == ["garlic fries"])
            #expect(try tablet.visits().first?.recordName == visit.recordName)

            // The phone's own write coming back is not news, and nothing else changed.
            #expect(try await phone.sync() == SyncReport())
            #expect(try await tablet.sync() == SyncReport())

            // A delete travels as a tombstone.
            try tablet.deleteVisit(visit.recordName)
            #expect(try tablet.visits().isEmpty)
            #expect(try await tablet.sync().sent == 1)
            #expect(try await phone.sync().deleted == 1)
            #expect(try phone.visits().isEmpty)
            #expect(try await Self.serverVisits(server).isEmpty)
        }
    }

    /// Live sync: the tablet waits (`changes/wait`) instead of polling (its poll interval is an hour), and a visit
    /// saved on the phone, then an operator's canonical import, each reach it by the wake-up alone.
    @Test func anEditAndAnImportReachAWaitingDeviceWithoutPolling() async throws {
        try await Self.run { server, folder in
            var configuration = SyncConfiguration()
            configuration.pollInterval = .seconds(3600)
            let phone = try await Self.device(server, folder, "phone")
            let tablet = try await Self.device(server, folder, "tablet", configuration: configuration)
            let (reports, reported) = AsyncStream.makeStream(of: SyncReport.self)
            let live = Task { await tablet.syncContinuously { reported.yield((try? $0.get()) ?? SyncReport()) } }
            defer { live.cancel() }
            var iterator = reports.makeAsyncIterator()
            _ = await iterator.next()
            let feed = server.dependencies.records.changes.feed
            try await eventually("the device to wait", on: feed.waitingChanges) { feed.waiting >= 1 }

            let started = ContinuousClock.now
            _ = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_717_243_200_000, notes: "live")
            try await phone.sync()
            var report = await iterator.next()
            while report?.fetched == 0 { report = await iterator.next() }
            print("live sync: phone's save to tablet's fetch in \(ContinuousClock.now - started)")
            #expect(try tablet.visits().map(\.notes) == ["live"])

            try await eventually("the device to wait", on: feed.waitingChanges) { feed.waiting >= 1 }
            _ = try await server.importer.run(
                try CanonicalFixtures.dataset.get(), container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            report = await iterator.next()
            while report?.fetched == 0 { report = await iterator.next() }
            #expect(try tablet.stadium("stadium_mlb_oracle_park") != nil)
        }
    }

    @Test func concurrentEditsToOneVisitConverge() async throws {
        try await Self.run { server, folder in
            let phone = try await Self.device(server, folder, "phone")
            let tablet = try await Self.device(server, folder, "tablet")
            let visit = try phone.addVisit(stadiumID: "stadium_nba_chase_center", date: 1_700_000_000_000)
            try await phone.sync()
            try await tablet.sync()

            // Different fields, edited on both before either syncs: both edits survive.
            try phone.setNotes("courtside", forVisit: visit.recordName)
            try tablet.store.save(visit.recordName, type: "StadiumVisit", fields: ["seatSection": FieldValue(type: .string, value: "114")])
            try await phone.sync()
            let merged = try await tablet.sync()
            #expect(merged.sent == 1)
            try await phone.sync()
            for device in [phone, tablet] {
                let record = try #require(try device.store.record(visit.recordName, scope: .private))
                #expect(record.fields["notes"]?.value == "courtside")
                #expect(record.fields["seatSection"]?.value == "114")
            }

            // The same field on both: the edit that reaches the server last wins, on every device. The tablet's
            // update carries a stale change tag and gets CONFLICT with the server record, merges and sends again.
            try phone.setNotes("from the phone", forVisit: visit.recordName)
            try tablet.setNotes("from the tablet", forVisit: visit.recordName)
            try await phone.sync()
            // Skip the tablet's fetch so its push meets the conflict.
            var report = SyncReport()
            try await tablet.engine.sendChanges(into: &report) { _ in }
            #expect(report.merged == 1 && report.sent == 1)
            try await phone.sync()
            try await tablet.sync()
            let phoneRecord = try #require(try phone.store.record(visit.recordName, scope: .private))
            let tabletRecord = try #require(try tablet.store.record(visit.recordName, scope: .private))
            #expect(phoneRecord == tabletRecord)
            #expect(phoneRecord.fields["notes"]?.value == "from the tablet")
            #expect(phoneRecord.fields["seatSection"]?.value == "114")
            let onServer = try #require(try await Self.serverVisits(server).first)
            #expect(onServer["recordChangeTag"]?.stringValue == phoneRecord.changeTag)
        }
    }

    @Test func aDevicePagingWhileAnotherWritesEndsWithTheServersState() async throws {
        try await Self.run { server, folder in
            var small = SyncConfiguration()
            small.pageSize = 7
            small.batchSize = 9
            let phone = try await Self.device(server, folder, "phone", configuration: small)
            let tablet = try await Self.device(server, folder, "tablet", configuration: small)
            // The phone writes in rounds (creates, edits, deletes) while the tablet keeps syncing in small pages.
            let done = Mutex(false)
            let writer = Task {
                defer { done.withLock { $0 = true } }
                var names: [String] = []
                for round in 0..<6 {
                    for index in 0..<10 {
                        names.append(try phone.addVisit(stadiumID: "stadium_mlb_fenway_park", date: Int64(round * 100 + index)).recordName)
                    }
                    for name in names.shuffled().prefix(4) { try phone.setNotes("round \(round)", forVisit: name) }
                    for name in names.suffix(2) where round.isMultiple(of: 2) { try phone.deleteVisit(name) }
                    names.removeAll { try! phone.store.record($0, scope: .private) == nil }
                    try await phone.sync()
                }
            }
            var syncs = 0
            while !done.withLock({ $0 }) && syncs < 500 {
                try await tablet.sync()
                syncs += 1
            }
            try await writer.value
            try await phone.sync()
            try await tablet.sync()
            let onServer = try await Self.serverVisits(server)
            let serverState = Dictionary(
                uniqueKeysWithValues: onServer.map { ($0["recordName"]!.stringValue!, $0["fields"]?["notes"]?["value"]?.stringValue) })
            for device in [phone, tablet] {
                let local = try device.visits()
                #expect(Dictionary(uniqueKeysWithValues: local.map { ($0.recordName, $0.notes) }) == serverState)
                #expect(local.allSatisfy { $0.isSynced })
            }
            #expect(serverState.count == 54, "60 created, 6 deleted")
            #expect(syncs > 1, "the tablet synced while the phone wrote")
        }
    }

    @Test func anEditMadeWhileItsBatchIsInFlightIsSentNext() async throws {
        try await Self.run { server, folder in
            let network = FlakyTransport()
            let phone = try await Self.device(server, folder, "phone", transport: network)
            let visit = try phone.addVisit(stadiumID: "stadium_nfl_lambeau_field", date: 1_700_000_000_000, notes: "one")
            // The person edits the visit again while the batch carrying "one" is on its way.
            let edited = Mutex(false)
            network.state.withLock {
                $0.before["records/modify"] = {
                    guard
                        edited.withLock({
                            let first = !$0; $0 = true; return first
                        })
                    else { return }
                    try phone.setNotes("two", forVisit: visit.recordName)
                }
            }
            let report = try await phone.sync()
            #expect(network.sent("records/modify").count == 2, "the create, then the newer edit as an update")
            #expect(report.sent == 2 && report.waiting == 0)
            #expect(try phone.visits().first?.notes == "two")
            #expect(try await Self.serverVisits(server).first?["fields"]?["notes"]?["value"] == "two")
        }
    }

    @Test func aThrottledDeviceWaitsAndCarriesOn() async throws {
        // Two calls at once, then one every two seconds: the third call of the first sync is throttled. The device's
        // wait for `retryAfter` moves the server's clock on, so nothing waits for time to pass.
        let clock = ManualClock()
        try await TestServer.run(
            .live,
            configure: {
                $0.clock = clock.clock
                $0.rateLimits.perAccount = RateLimit(perSecond: 0.5, burst: 2)
            }
        ) { server in
            _ = try await server.dependencies.credentials.setPassword(accountName: "alice", password: Self.password, logger: TestDatabase.logger)
            let folder = NSTemporaryDirectory() + "stadiumcloud-client-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let network = FlakyTransport()
            let phone = try await Self.device(server, folder, "phone", transport: network, clock: clock)
            for day in 0..<2 { try phone.addVisit(stadiumID: "stadium_mlb_fenway_park", date: Int64(day) * 86_400_000) }
            // changes/database, changes/zone and records/modify, then changes/database and changes/zone.
            try await phone.sync()
            let report = try await phone.sync()
            #expect(report.waiting == 0)
            #expect(network.sent("/database/").contains { $0.status == 503 }, "the server did throttle")
            #expect(try phone.visits().allSatisfy(\.isSynced))
            clock.advance(by: .seconds(2))  // the query below counts against the same account's budget
            #expect(try await Self.serverVisits(server).count == 2)
        }
    }

    @Test func aConflictFromAServerWithoutServerRecordIsLookedUpAndMerged() async throws {
        try await Self.run { server, folder in
            let network = FlakyTransport()
            network.state.withLock { $0.stripServerRecords = true }
            let phone = try await Self.device(server, folder, "phone")
            let tablet = try await Self.device(server, folder, "tablet", transport: network)
            let visit = try phone.addVisit(stadiumID: "stadium_nba_chase_center", date: 1_700_000_000_000)
            try await phone.sync()
            try await tablet.sync()
            try phone.setNotes("from the phone", forVisit: visit.recordName)
            try tablet.store.save(visit.recordName, type: "StadiumVisit", fields: ["seatRow": FieldValue(type: .string, value: "K")])
            try await phone.sync()
            var report = SyncReport()
            try await tablet.engine.sendChanges(into: &report) { _ in }
            #expect(report.merged == 1 && report.sent == 1)
            #expect(network.sent("records/lookup").count == 1)
            try await phone.sync()
            for device in [phone, tablet] {
                let record = try #require(try device.store.record(visit.recordName, scope: .private))
                #expect(record.fields["notes"]?.value == "from the phone")
                #expect(record.fields["seatRow"]?.value == "K")
            }
        }
    }

    @Test func oneMalformedEditDoesNotHoldBackTheOthers() async throws {
        try await Self.run { server, folder in
            let phone = try await Self.device(server, folder, "phone")
            var names: [String] = []
            for day in 0..<9 { names.append(try phone.addVisit(stadiumID: "stadium_mlb_fenway_park", date: Int64(day) * 86_400_000).recordName) }
            // A value the schema does not allow (notes are text): the server refuses the record that carries it.
            try phone.store.save(names[4], type: "StadiumVisit", fields: ["notes": FieldValue(type: .int64, value: 5)])
            let report = try await phone.sync()
            #expect(report.sent == 8)
            #expect(report.refused.count == 1 && report.refused[0].hasPrefix(names[4] + ": BAD_REQUEST"))
            #expect(try await Self.serverVisits(server).count == 8)
            #expect(try phone.store.pendingCounts() == (waiting: 0, refused: 1))
            // Fixed by the person (the field removed), it goes.
            try phone.store.save(names[4], type: "StadiumVisit", fields: ["notes": nil])
            #expect(try await phone.sync().sent == 1)
            #expect(try await Self.serverVisits(server).count == 9)
        }
    }

    @Test func aPublicZoneResetKeepsTheNicknameAndDropsWhatTheServerPurged() async throws {
        try await Self.run { server, folder in
            let dataset = try CanonicalFixtures.dataset.get()
            _ = try await server.importer.run(dataset, container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            let phone = try await Self.device(server, folder, "phone")
            try await phone.sync()
            let oracle = "stadium_mlb_oracle_park"
            try phone.setNickname("The Yard", for: oracle)
            try await phone.sync()
            // An operator hard-deletes a public record (canonical imports never do), and its tombstone is purged.
            let alias = try #require(try phone.store.records(ofType: "StadiumAlias", scope: .public).first)
            let deleted = try await server.modify([Op.typed("forceDelete", alias.recordName)], database: "public", signed: true)
            #expect(deleted.records.first?["deleted"] == true)
            _ = try await server.dependencies.records.purgeTombstones(olderThanMs: Timestamp.now + 1_000, logger: TestDatabase.logger)
            let venues = try phone.stadiums().count

            let report = try await phone.sync()
            #expect(report.zonesReset == [defaultZoneName])
            #expect(try phone.store.record(alias.recordName, scope: .public) == nil)
            #expect(try phone.stadiums().count == venues)
            #expect(try phone.stadium(oracle)?.userNickname == "The Yard")
        }
    }

    @Test func aDeviceSyncsTheSeasonsItFollowsReadsGamesOfflineAndAsksTheServerToMatchAPhoto() async throws {
        try await Self.run { server, folder in
            var dataset = try CanonicalFixtures.dataset.get()
            dataset.games = try CanonicalGamesTests.dataset.get().games.filter { $0.key != "mlb_2024" }
            _ = try await server.importer.run(dataset, container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            let phone = try await Self.device(server, folder, "phone")
            let entities = try await phone.sync().fetched
            #expect(try phone.games(on: "2025-03-18").isEmpty, "no season followed yet")

            try await phone.follow(seasons: ["mlb_2025"])
            let report = try await phone.sync()
            #expect(report.fetched == dataset.games["mlb_2025"]!.count)
            let tokyo = try phone.games(on: "2025-03-18", leagues: ["mlb"])
            #expect(tokyo.map(\.homeTeam) == ["team_mlb_cubs"])
            #expect(tokyo.first?.homeScore == 1 && tokyo.first?.awayScore == 4)
            #expect(try phone.games(on: "2025-10-21", leagues: ["nba"]).isEmpty, "NBA 2025-26 is not followed")
            let cubs = try phone.games(team: "team_mlb_cubs", from: "2025-03-01", through: "2025-03-31")
            #expect(cubs.first?.id == tokyo.first?.id)
            #expect(
                try phone.games(stadium: "stadium_mlb_wrigley_field", from: "2025-04-01", through: "2025-04-30").allSatisfy {
                    $0.homeTeam == "team_mlb_cubs"
                })
            await #expect(throws: SyncError.self) { try await phone.follow(seasons: ["baseball"]) }

            // Reopened, the store remembers the seasons; switching to NBA drops MLB from the device.
            let reopened = try await Self.device(server, folder, "phone")
            #expect(reopened.followedSeasons == ["mlb_2025"])
            try await reopened.follow(seasons: ["nba_2025"])
            #expect(try await reopened.sync().fetched == dataset.games["nba_2025"]!.count)
            #expect(try reopened.games(on: "2025-03-18").isEmpty)
            #expect(try reopened.games(on: "2025-10-21", leagues: ["league_nba"]).contains { $0.homeTeam == "team_nba_thunder" })
            #expect(entities > 0)

            // Matching asks the server, which knows every season.
            let start = try #require(GameTime.milliseconds("2025-03-18T10:10:00Z"))
            let match = try await reopened.match(latitude: 35.7056, longitude: 139.7519, time: start + 3_600_000)
            #expect(match.verdict == "autoSelect" && match.games.first?.confidence == "exact")
            #expect(match.games.first?.summary.hasPrefix("Los Angeles Dodgers at Chicago Cubs 4–1") == true)
        }
    }

    /// The SDK reads the scoreboard's cards and a league's standings as the server writes them (`NamedGame`,
    /// `Standings` in SportsDomain), for seasons the device does not follow.
    @Test func theSDKReadsTheScoreboardCardsAndTheStandings() async throws {
        try await Self.run { server, folder in
            var dataset = try CanonicalFixtures.dataset.get()
            dataset.games = try ScoreboardCardTests.dataset.get().games
            _ = try await server.importer.run(dataset, container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            let phone = try await Self.device(server, folder, "phone")
            let games = try await phone.scoreboard(on: "2025-06-15", leagues: ["mlb"])
            #expect(games.count == 15)
            let game = try #require(games.first { $0.homeTeam.canonicalId == "team_mlb_cubs" || $0.awayTeam.canonicalId == "team_mlb_cubs" })
            let card = try #require(game.homeTeam.canonicalId == "team_mlb_cubs" ? game.homeCard : game.awayCard)
            #expect(card.abbreviation == "CHC" && card.logo == TeamCard.logo(of: "team_mlb_cubs") && card.record != nil)
            #expect(games.allSatisfy { $0.homeCard?.standing?.conference != nil && $0.awayCard?.standing?.division != nil })

            let standings = try await phone.standings(league: "mlb", on: "2025-06-15")
            #expect(standings.season == 2025 && standings.format == .winsLosses && standings.teams.count == 30)
            #expect(standings.card(of: "team_mlb_cubs") == card)
            let final = try await phone.standings(league: "nwsl", season: 2024)
            #expect(final.teams.first?.record == SeasonRecord(format: .winsDrawsLosses, wins: 18, losses: 2, draws: 6))
            await #expect(throws: SyncError.self) { try await phone.standings(league: "xfl", on: "2025-06-15") }
        }
    }

    @Test func aRenamedVenueShowsItsNewNameWhileTheNicknameStays() async throws {
        try await Self.run { server, folder in
            let importer = server.importer
            var dataset = try CanonicalFixtures.dataset.get()
            _ = try await importer.run(dataset, container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            let phone = try await Self.device(server, folder, "phone")
            let tablet = try await Self.device(server, folder, "tablet")
            let first = try await phone.sync()
            #expect(first.fetched == (try dataset.records().count))
            try await tablet.sync()

            // A visit keeps the venue's name of its day, from the canonical aliases.
            let visit = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_117_584_000_000)  // 2005-06-01
            #expect(visit.stadiumNameAtVisit == "SBC Park")

            // The phone names the venue, the tablet marks it a favourite, before either syncs: one preference
            // record (named after the venue) ends up with both.
            let oracle = "stadium_mlb_oracle_park"
            try phone.setNickname("The Yard", for: oracle)
            try tablet.setFavorite(true, for: oracle)
            #expect(try phone.stadium(oracle)?.userNickname == "The Yard", "shown at once, before any sync")
            #expect(throws: SyncError.self) { try phone.setNickname("x", for: "stadium_nowhere") }
            try await phone.sync()
            try await tablet.sync()
            try await phone.sync()

            // The operator renames the venue.
            let index = dataset.stadiums.firstIndex { $0.id == oracle }!
            dataset.stadiums[index].name = "Bay Ballpark"
            dataset.stadiumAliases.removeAll { $0.stadiumId == oracle && $0.name == "Oracle Park" }
            _ = try await importer.run(dataset, container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            for device in [phone, tablet] {
                let report = try await device.sync()
                #expect(report.fetched >= 2, "the venue and its new alias")
                let stadium = try #require(try device.stadium(oracle))
                #expect(stadium.name == "Bay Ballpark")
                #expect(stadium.userNickname == "The Yard")
                #expect(stadium.isFavorite)
                let aliases = try device.store.records(ofType: "StadiumAlias", scope: .public).filter { $0.reference("stadium") == oracle }
                #expect(aliases.contains { $0.fields["name"]?.value == "Oracle Park" })
            }

            // Clearing the nickname clears it everywhere; the canonical name is untouched.
            try tablet.setNickname(nil, for: oracle)
            try await tablet.sync()
            try await phone.sync()
            #expect(try phone.stadium(oracle)?.userNickname == nil)
            #expect(try phone.stadium(oracle)?.name == "Bay Ballpark")
        }
    }

    @Test func anOfflineQueueSurvivesARestartAndSyncsOnce() async throws {
        try await Self.run { server, folder in
            let network = FlakyTransport()
            do {
                let phone = try await Self.device(server, folder, "phone", transport: network)
                network.offline = true
                for day in 0..<3 { try phone.addVisit(stadiumID: "stadium_nhl_td_garden", date: 1_700_000_000_000 + Int64(day) * 86_400_000) }
                await #expect(throws: SyncError.self) { try await phone.sync() }
                #expect(try phone.store.pendingCounts().waiting == 3)
            }
            // The app restarts. The network is back, but the answers to the batch are lost, every time, so this sync
            // fails after the server has applied the batch.
            network.offline = false
            network.state.withLock { $0.losing["records/modify"] = 10 }
            do {
                let phone = try await Self.device(server, folder, "phone", transport: network)
                #expect(try phone.visits().count == 3)
                await #expect(throws: SyncError.self) { try await phone.sync() }
            }
            #expect(try await Self.serverVisits(server).count == 3)
            // Another restart, a working network: the saved batch is sent once more with the same key and the same
            // bytes, and the server answers what it answered the first time.
            network.state.withLock { $0.losing = [:] }
            let phone = try await Self.device(server, folder, "phone", transport: network)
            let report = try await phone.sync()
            #expect(report.sent == 3 && report.refused.isEmpty && report.waiting == 0)
            #expect(try phone.visits().allSatisfy(\.isSynced))
            let sends = network.sent("records/modify")
            #expect(sends.count == 4, "three tries with lost answers, then one answered")
            #expect(Set(sends.map(\.idempotencyKey)).count == 1)
            #expect(Set(sends.map(\.bodyBytes)).count == 1)
            #expect(try await Self.serverVisits(server).count == 3)
            #expect(try await phone.sync().sent == 0)
        }
    }

    @Test func anExpiredChangeTokenRefetchesTheZone() async throws {
        try await Self.run { server, folder in
            let phone = try await Self.device(server, folder, "phone")
            let tablet = try await Self.device(server, folder, "tablet")
            let kept = try phone.addVisit(stadiumID: "stadium_mlb_fenway_park", date: 1_600_000_000_000)
            let gone = try phone.addVisit(stadiumID: "stadium_mlb_wrigley_field", date: 1_600_000_100_000)
            try await phone.sync()
            try await tablet.sync()
            #expect(try tablet.visits().count == 2)

            // The phone deletes one; its tombstone is purged before the tablet syncs again.
            try phone.deleteVisit(gone.recordName)
            try await phone.sync()
            _ = try await server.dependencies.records.purgeTombstones(olderThanMs: Timestamp.now + 1_000, logger: TestDatabase.logger)
            try tablet.setNotes("queued while the token expired", forVisit: kept.recordName)

            let report = try await tablet.sync()
            #expect(report.zonesReset == [defaultZoneName])
            #expect(try tablet.visits().map(\.recordName) == [kept.recordName], "the purged deletion reaches the tablet")
            #expect(report.sent == 1, "the queued edit survives the reset")
            try await phone.sync()
            #expect(try phone.visits().first?.notes == "queued while the token expired")
        }
    }

    /// After a restore or failover the server refuses the devices' tokens (CHANGE_TOKEN_EXPIRED), or cannot read them
    /// at all (BAD_REQUEST: another installation's): devices fetch again, drop what the server lost, and still send
    /// what they had queued, even an edit of a record the restore lost.
    @Test func aRestoreMakesDevicesStartOverAndKeepTheirQueuedEdits() async throws {
        try await Self.run { server, folder in
            let phone = try await Self.device(server, folder, "phone")
            let tablet = try await Self.device(server, folder, "tablet")
            let kept = try phone.addVisit(stadiumID: "stadium_mlb_fenway_park", date: 1_600_000_000_000)
            let lost = try phone.addVisit(stadiumID: "stadium_mlb_wrigley_field", date: 1_600_000_100_000)
            let written = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_600_000_150_000)
            try await phone.sync()
            try await tablet.sync()
            #expect(try tablet.visits().count == 3)

            // The restore: two visits written after the backup are gone, and the history forked.
            try await HistoryTests.restore(server, losing: [lost.recordName, written.recordName])
            // Queued on the tablet meanwhile: an edit of a lost visit and a new visit.
            try tablet.setNotes("edited offline", forVisit: lost.recordName)
            let added = try tablet.addVisit(stadiumID: "stadium_mlb_yankee_stadium", date: 1_600_000_200_000)
            // The phone holds a database token no server of this installation signed.
            let foreign = ChangeToken(kind: .database, databaseID: 1, seq: 1, epoch: 1).encode(
                with: TokenSigner(key: [UInt8](repeating: 9, count: 32)))
            try phone.store.setDatabaseToken(foreign, scope: .private)

            let report = try await tablet.sync()
            #expect(report.zonesReset == [defaultZoneName, defaultZoneName], "the public zone and the private one")
            #expect(report.sent == 2)
            let server = Set(try await Self.serverVisits(server).compactMap { $0["recordName"]?.stringValue })
            #expect(server == [kept.recordName, lost.recordName, added.recordName], "the visit the restore lost and nobody edited stays lost")
            try await phone.sync()
            #expect(Set(try phone.visits().map(\.recordName)) == server)
            #expect(Set(try tablet.visits().map(\.recordName)) == server)
            #expect(try phone.visits().first { $0.recordName == lost.recordName }?.notes == "edited offline")
        }
    }

    /// Regression: a refused download URL (expired, or signed before a restore) was renewed by reading the record
    /// again, but the record was unchanged (same tag) and the device kept the refused URL: every download failed.
    @Test func aPhotoWhoseDownloadURLIsRefusedDownloadsWithARenewedOne() async throws {
        try await Self.run { server, folder in
            let file = URL(fileURLWithPath: folder + "/photo.jpg")
            let bytes = Data((0..<50_000).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index % 253) })
            try bytes.write(to: file)
            let phone = try await Self.device(server, folder, "phone")
            let visit = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_717_243_200_000).recordName
            try await phone.sync()
            let photo = try await phone.addPhoto(file, toVisit: visit)
            try await phone.sync()
            let tablet = try await Self.device(server, folder, "tablet")
            try await tablet.sync()
            // A new history: every URL the tablet holds is refused now; the photo record is unchanged.
            try await HistoryTests.fork(server)
            let copy = URL(fileURLWithPath: folder + "/copy.jpg")
            try await tablet.downloadPhoto(photo.recordName, to: copy)
            #expect(try Data(contentsOf: copy) == bytes)
        }
    }

    @Test func aPhotoUploadResumesAfterAnInterruptionAndDownloadsIntact() async throws {
        try await Self.run { server, folder in
            var configuration = SyncConfiguration()
            configuration.chunkSize = 256 * 1024
            let network = FlakyTransport()
            let file = URL(fileURLWithPath: folder + "/photo.jpg")
            let bytes = Data((0..<(3 * 1024 * 1024 + 1234)).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index % 251) })
            try bytes.write(to: file)
            let visitName: String
            do {
                let phone = try await Self.device(server, folder, "phone", transport: network, configuration: configuration)
                visitName = try phone.addVisit(stadiumID: "stadium_mlb_oracle_park", date: 1_717_243_200_000).recordName
                try await phone.sync()
                // The network drops after five chunks.
                network.state.withLock { $0.cutAfter["/assets/upload/"] = 5 }
                await #expect(throws: SyncError.self) { try await phone.addPhoto(file, toVisit: visitName) }
            }
            network.state.withLock {
                $0.offline = false; $0.cutAfter = [:]; $0.sent = []
            }
            let phone = try await Self.device(server, folder, "phone", transport: network, configuration: configuration)
            let seen = Mutex<[TransferProgress]>([])
            let photo = try await phone.addPhoto(file, toVisit: visitName, caption: "from the upper deck") { progress in
                seen.withLock { $0.append(progress) }
            }
            let progress = seen.withLock { $0 }
            let resumedAt = try #require(progress.first).bytes
            #expect(resumedAt == Int64(5 * 256 * 1024), "resumed where the server stopped")
            #expect(progress.last == TransferProgress(bytes: Int64(bytes.count), total: Int64(bytes.count)))
            #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.bytes <= $1.bytes })
            let resent = network.sent("/assets/upload/").filter { $0.method == "POST" }.map(\.bodyBytes).reduce(0, +)
            #expect(resent == bytes.count - 5 * 256 * 1024)
            try await phone.sync()

            let tablet = try await Self.device(server, folder, "tablet", configuration: configuration)
            try await tablet.sync()
            #expect(try tablet.photos(ofVisit: visitName).map(\.caption) == ["from the upper deck"])
            let copy = URL(fileURLWithPath: folder + "/copy.jpg")
            let downloaded = Mutex<[TransferProgress]>([])
            try await tablet.downloadPhoto(photo.recordName, to: copy) { progress in downloaded.withLock { $0.append(progress) } }
            #expect(try Data(contentsOf: copy) == bytes)
            #expect(downloaded.withLock { $0.last?.bytes } == Int64(bytes.count))
            #expect(!FileManager.default.fileExists(atPath: copy.path + ".part"))
        }
    }
}
