import Crypto
import Foundation

/// Signs and verifies the opaque strings handed to clients (change tokens, continuation markers), so a client
/// can neither forge nor alter them. The key lives in the database, so tokens survive restarts.
public struct TokenSigner: Sendable {
    /// The HMAC with the key already absorbed: each token copies it instead of hashing the key again.
    private let keyed: HMAC<SHA256>
    private static let macLength = 16

    public init(key: some ContiguousBytes) { self.keyed = HMAC(key: SymmetricKey(data: key)) }

    private func mac(_ payload: [UInt8]) -> HMAC<SHA256>.MAC {
        var hmac = self.keyed
        hmac.update(data: payload)
        return hmac.finalize()
    }

    public func sign(_ payload: [UInt8]) -> String {
        Self.base64URL(payload + Array(self.mac(payload)).prefix(Self.macLength))
    }

    /// The payload of a string this signer made, or `nil` when it is malformed or altered.
    public func verify(_ text: String) -> [UInt8]? {
        guard let bytes = Self.fromBase64URL(text), bytes.count > Self.macLength else { return nil }
        let payload = Array(bytes.dropLast(Self.macLength))
        let mac = self.mac(payload)
        // Constant-time comparison of the truncated MAC.
        var difference: UInt8 = 0
        for (expected, given) in zip(Array(mac).prefix(Self.macLength), bytes.suffix(Self.macLength)) { difference |= expected ^ given }
        return difference == 0 ? payload : nil
    }

    /// A key of its own for another use of the server's secret (account exports), so no secret is added and a MAC
    /// of one use is never valid for another. The label is ASCII text; token payloads begin with a version byte below
    /// 0x20, so a label is never a token.
    public func derivedKey(for purpose: String) -> SymmetricKey {
        var hmac = self.keyed
        hmac.update(data: Array("stadiumcloud derived key: \(purpose)".utf8))
        return SymmetricKey(data: hmac.finalize())
    }

    public static func base64URL(_ bytes: [UInt8]) -> String { Base64URL.encode(bytes) }

    static func fromBase64URL(_ text: String) -> [UInt8]? { Base64URL.decode(text) }
}

/// A position in a database's change sequence, for one zone (`changes/zone`, `records/changes`) or for the
/// database's list of zones (`changes/database`). Opaque to clients; see `docs/SYNC.md` for why it is correct.
public struct ChangeToken: Sendable, Hashable {
    public enum Kind: UInt8, Sendable {
        case zone = 1
        case database = 2
    }
    public var kind: Kind
    public var databaseID: Int64
    /// The zone's internal id (a re-created zone of the same name has a new one); 0 for database tokens.
    public var zoneID: Int64
    /// Every change with a larger sequence number is after this token.
    public var seq: Int64
    /// The purge horizon (`purged_seq`) when the token was issued. Tombstones up to it were already gone, and the
    /// answer that carried the token did not need them.
    public var horizon: Int64
    /// The history of the database the token was issued in (docs/SYNC.md, "Restores and failovers"); 0 for tokens
    /// made before histories had epochs.
    public var epoch: Int64
    /// For a page of a first fetch (from no token): the head when it began. Tombstones at or below it are of records
    /// deleted before, which its holder never had; 0 otherwise.
    public var firstFetchHead: Int64

    public init(kind: Kind, databaseID: Int64, zoneID: Int64 = 0, seq: Int64, horizon: Int64 = 0, epoch: Int64, firstFetchHead: Int64 = 0) {
        self.kind = kind
        self.databaseID = databaseID
        self.zoneID = zoneID
        self.seq = seq
        self.horizon = horizon
        self.epoch = epoch
        self.firstFetchHead = firstFetchHead
    }

    /// Whether a purge since the token was issued may have removed tombstones its holder has not seen: the
    /// horizon has moved past both the token's position and the horizon it was issued under. A token issued
    /// after the purge (say, mid-way through a first fetch from nothing) stays good even below the horizon.
    public func isExpired(purgedSeq: Int64) -> Bool { self.seq < purgedSeq && self.horizon < purgedSeq }

    /// Older versions are still read: 1 without the horizon, 2 without the epoch, 3 without the first fetch's head
    /// (each missing number is 0).
    private static let version: UInt8 = 4
    private static let lengths: [Int: UInt8] = [26: 1, 34: 2, 42: 3, 50: 4]

    public func encode(with signer: TokenSigner) -> String {
        var payload: [UInt8] = [Self.version, self.kind.rawValue]
        for number in [self.databaseID, self.zoneID, self.seq, self.horizon, self.epoch, self.firstFetchHead] { payload += number.bigEndianBytes }
        return signer.sign(payload)
    }

    /// One answer for a forged token and for another database's genuine one, so a token tells nothing about
    /// another account. Either way the client starts again without a token.
    public static let notValidHere = CloudError.badRequest(
        "syncToken is not valid for this database (malformed, altered or issued for another database); fetch again without a token")

    /// Decodes and verifies a client's token; anything malformed, altered or of the wrong kind is BAD_REQUEST.
    public static func decode(_ text: String, kind: Kind, with signer: TokenSigner) throws -> ChangeToken {
        guard let payload = signer.verify(text), Self.lengths[payload.count] == payload[0], let parsedKind = Kind(rawValue: payload[1])
        else { throw Self.notValidHere }
        guard parsedKind == kind else {
            throw CloudError.badRequest(
                kind == .zone
                    ? "syncToken is a database token; changes/zone and records/changes need a zone token"
                    : "syncToken is a zone token; changes/database needs a database token")
        }
        /// The `index`th number of the payload, 0 when this version has none.
        func number(_ index: Int) -> Int64 {
            let start = 2 + index * 8
            return payload.count >= start + 8 ? Int64(bigEndianBytes: payload[start..<start + 8]) : 0
        }
        return ChangeToken(
            kind: kind, databaseID: number(0), zoneID: number(1), seq: number(2), horizon: number(3), epoch: number(4), firstFetchHead: number(5))
    }
}

/// Where a paged query continues: the offset into its ordered results, bound to a hash of the query itself.
public struct ContinuationMarker: Sendable, Hashable {
    public var queryHash: Int64
    public var offset: Int64

    public init(queryHash: Int64, offset: Int64) {
        self.queryHash = queryHash
        self.offset = offset
    }

    public func encode(with signer: TokenSigner) -> String {
        signer.sign([3] + self.queryHash.bigEndianBytes + self.offset.bigEndianBytes)
    }

    public static func decode(_ text: String, queryHash: Int64, with signer: TokenSigner) throws -> ContinuationMarker {
        // One answer for forged markers and for genuine ones of another query or database (another account's).
        guard let payload = signer.verify(text), payload.count == 17, payload[0] == 3,
            Int64(bigEndianBytes: payload[1..<9]) == queryHash
        else {
            throw CloudError.badRequest(
                "continuationMarker is not valid for this query (malformed, altered, or issued for another query or database); repeat the same query to page"
            )
        }
        return ContinuationMarker(queryHash: queryHash, offset: Int64(bigEndianBytes: payload[9..<17]))
    }

    /// A stable 64-bit hash of a query's canonical JSON text.
    public static func hash(of canonicalQuery: String) -> Int64 {
        let digest = SHA256.hash(data: Array(canonicalQuery.utf8))
        return Int64(bigEndianBytes: Array(digest).prefix(8))
    }
}

extension Int64 {
    /// Eight bytes, most significant first: how numbers go into signed tokens.
    public var bigEndianBytes: [UInt8] { withUnsafeBytes(of: self.bigEndian, Array.init) }

    public init(bigEndianBytes bytes: some Collection<UInt8>) {
        self = bytes.reduce(0) { ($0 << 8) | Int64($1) }
    }
}

extension Sequence<UInt8> {
    /// Lowercase hex, two digits a byte: how SHA-256 checksums, token hashes and derived names are written.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(self.underestimatedCount * 2)
        for byte in self { out += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }
}
