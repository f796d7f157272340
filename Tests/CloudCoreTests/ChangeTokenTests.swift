import CloudCore
import Testing

@Suite struct ChangeTokenTests {
    let signer = TokenSigner(key: Array(repeating: UInt8(7), count: 32))

    @Test func roundTrips() throws {
        let token = ChangeToken(kind: .zone, databaseID: 12, zoneID: 34, seq: 56_789, horizon: 60_000, epoch: 77, firstFetchHead: 60_100)
        #expect(try ChangeToken.decode(token.encode(with: self.signer), kind: .zone, with: self.signer) == token)
    }

    @Test func versionOneTokensAreStillReadWithNoHorizon() throws {
        let payload: [UInt8] = [1, 1] + [Int64(12), 34, 56_789].flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) }
        let token = try ChangeToken.decode(self.signer.sign(payload), kind: .zone, with: self.signer)
        #expect(token == ChangeToken(kind: .zone, databaseID: 12, zoneID: 34, seq: 56_789, horizon: 0, epoch: 0))
    }

    @Test func versionTwoTokensAreStillReadWithNoEpoch() throws {
        let payload: [UInt8] = [2, 1] + [Int64(12), 34, 56_789, 60_000].flatMap { withUnsafeBytes(of: $0.bigEndian, Array.init) }
        let token = try ChangeToken.decode(self.signer.sign(payload), kind: .zone, with: self.signer)
        #expect(token == ChangeToken(kind: .zone, databaseID: 12, zoneID: 34, seq: 56_789, horizon: 60_000, epoch: 0))
    }

    @Test func aTokenExpiresOnlyWhenAPurgeAfterItPassedIt() {
        let issuedBeforePurge = ChangeToken(kind: .zone, databaseID: 1, zoneID: 1, seq: 50, horizon: 0, epoch: 1)
        let issuedAfterPurge = ChangeToken(kind: .zone, databaseID: 1, zoneID: 1, seq: 50, horizon: 100, epoch: 1)
        #expect(issuedBeforePurge.isExpired(purgedSeq: 100))
        #expect(!issuedBeforePurge.isExpired(purgedSeq: 50), "nothing above the token was purged")
        #expect(!issuedAfterPurge.isExpired(purgedSeq: 100), "a first fetch from nothing, paging past the horizon")
        #expect(issuedAfterPurge.isExpired(purgedSeq: 120), "a later purge passed it")
    }

    @Test func alteredOrForeignTokensAreRejected() throws {
        let text = ChangeToken(kind: .zone, databaseID: 1, zoneID: 1, seq: 100, epoch: 1).encode(with: self.signer)
        var bytes = Array(text.utf8)
        bytes[10] = bytes[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        for candidate in [String(decoding: bytes, as: UTF8.self), "", "garbage", text + "x"] {
            #expect(throws: CloudError.self) { try ChangeToken.decode(candidate, kind: .zone, with: self.signer) }
        }
        let otherServer = TokenSigner(key: Array(repeating: UInt8(8), count: 32))
        #expect(throws: CloudError.self) { try ChangeToken.decode(text, kind: .zone, with: otherServer) }
        #expect(throws: CloudError.self) { try ChangeToken.decode(text, kind: .database, with: self.signer) }
    }

    @Test func continuationMarkerIsBoundToItsQuery() throws {
        let marker = ContinuationMarker(queryHash: 5, offset: 200).encode(with: self.signer)
        #expect(try ContinuationMarker.decode(marker, queryHash: 5, with: self.signer).offset == 200)
        #expect(throws: CloudError.self) { try ContinuationMarker.decode(marker, queryHash: 6, with: self.signer) }
    }
}
