import Canon
import CloudCore
@testable import CloudHTTP
import Crypto
import Foundation
import StadiumCloudClient
@testable import CloudSync
import Testing

/// Signed snapshots of public zones (docs/SCALING.md, "Snapshots"): a device starts from one with no network, then
/// fetches only what changed since; an altered file, or one signed with a key the app does not carry, is refused.
@Suite(.bounded) struct SnapshotTests {
    @Test func aDeviceStartsFromASignedSnapshotOfflineThenFetchesOnlyWhatChanged() async throws {
        try await ClientSyncTests.run { server, folder in
            _ = try await server.importer.run(
                try CanonicalFixtures.dataset.get(), container: "iCloud.com.sportstime.test", environment: "development", dryRun: false)
            let key = P256.Signing.PrivateKey()
            let made = try await makePublicSnapshot(
                container: "iCloud.com.sportstime.test", environment: "development", zones: nil, records: server.dependencies.records,
                signingKey: key, logger: TestDatabase.logger)
            let file = URL(fileURLWithPath: folder + "/snapshot.bin")
            try Data(made.file).write(to: file)
            #expect(made.records > 100)
            // An operator's edit after the snapshot was made.
            #expect(try await server.modify([Op.create("later", ["note": "after the snapshot"])], database: "public", signed: true).anyError == nil)

            let network = FlakyTransport()
            let phone = try await ClientSyncTests.device(server, folder, "phone", transport: network)
            network.offline = true
            let requests = network.sent("/").count
            #expect(try await phone.bootstrap(fromSnapshot: file, trustedKeys: [P256.Signing.PrivateKey().publicKey, key.publicKey]) == made.records)
            #expect(try phone.stadium("stadium_mlb_oracle_park") != nil, "canonical data with no network")
            #expect(network.sent("/").count == requests)
            network.offline = false
            let report = try await phone.sync()
            #expect(report.fetched == 1, "only the edit made after the snapshot: \(report)")
            #expect(try phone.store.record("later", scope: .public) != nil)
            #expect(try await phone.bootstrap(fromSnapshot: file, trustedKeys: [key.publicKey]) == 0, "a zone already synced is left alone")

            // One bit changed, or a key the app does not carry: refused, nothing stored.
            let tablet = try await ClientSyncTests.device(server, folder, "tablet")
            var altered = made.file
            altered[altered.count - 20] ^= 1
            let alteredFile = URL(fileURLWithPath: folder + "/altered.bin")
            try Data(altered).write(to: alteredFile)
            for (snapshot, keys, reason) in [
                (alteredFile, [key.publicKey], "altered"), (file, [P256.Signing.PrivateKey().publicKey], "does not trust"),
            ] {
                await #expect { try await tablet.bootstrap(fromSnapshot: snapshot, trustedKeys: keys) } throws: {
                    ($0 as? ArchiveError)?.description.contains(reason) ?? false
                }
            }
            #expect(try tablet.stadium("stadium_mlb_oracle_park") == nil)
        }
    }
}
