import Crypto
import Foundation

/// A signed snapshot of public zones (docs/SCALING.md, "Snapshots"): what an app ships inside its binary and reads at
/// first launch with no network, then syncs on from each zone's change token. The file is
///
///     STADIUMCLOUD-SNAPSHOT 1\n<key id>\n<base64 ECDSA P-256 signature of the payload>\n<payload>
///
/// where the payload is gzip of `{"format", "container", "environment", "createdAt", "zones": [{"zoneName",
/// "syncToken", "records": [CloudKit record dictionaries]}]}`. The signature covers the compressed bytes, so a file
/// that was altered (or served by a cache that is not trusted) is refused before it is even decompressed. The key id
/// (16 hex digits of the public key's SHA-256) lets an app carry the next key before the operator switches to it.
public struct PublicSnapshot: Sendable {
    public static let format = "stadiumcloud-public-snapshot"
    static let magic = "STADIUMCLOUD-SNAPSHOT 1"

    public struct Zone: Sendable {
        public var zoneName: String
        public var syncToken: String
        public var records: [JSONValue]
    }

    public var container: String
    public var environment: String
    public var createdAtMs: Int64
    public var zones: [Zone]

    /// The id a file names its key by.
    public static func keyID(of key: P256.Signing.PublicKey) -> String {
        SHA256.hash(data: key.x963Representation).prefix(8).hexString
    }

    /// The file for `payload` (already gzip'd), signed with `key`.
    public static func file(payload: [UInt8], signedWith key: P256.Signing.PrivateKey) throws -> [UInt8] {
        let signature = try key.signature(for: payload).derRepresentation.base64EncodedString()
        return Array("\(magic)\n\(keyID(of: key.publicKey))\n\(signature)\n".utf8) + payload
    }

    /// Reads a snapshot file: refused unless it is signed by one of `trustedKeys` and decompresses to a snapshot.
    public init(file: [UInt8], trustedKeys: [P256.Signing.PublicKey]) throws {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        for (index, byte) in file.enumerated() where byte == UInt8(ascii: "\n") {
            lines.append(file[start..<index])
            start = index + 1
            if lines.count == 3 { break }
        }
        guard lines.count == 3, String(decoding: lines[0], as: UTF8.self) == Self.magic else {
            throw ArchiveError("this is not a StadiumCloud snapshot (version 1)")
        }
        let keyID = String(decoding: lines[1], as: UTF8.self)
        guard let key = trustedKeys.first(where: { Self.keyID(of: $0) == keyID }) else {
            throw ArchiveError("the snapshot is signed with key \(keyID), which this app does not trust")
        }
        let payload = file[start...]
        guard let der = Data(base64Encoded: String(decoding: lines[2], as: UTF8.self)),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: der), key.isValidSignature(signature, for: payload)
        else { throw ArchiveError("the snapshot's signature does not match its content: it was altered") }
        let json = try JSONValue.parse(try Gzip.decompress(Array(payload)))
        guard json["format"]?.stringValue == Self.format, let container = json["container"]?.stringValue,
            let environment = json["environment"]?.stringValue, let zones = json["zones"]?.arrayValue
        else { throw ArchiveError("the snapshot's content lacks its format, container, environment or zones") }
        self.container = container
        self.environment = environment
        self.createdAtMs = json["createdAt"]?.int64Value ?? 0
        self.zones = try zones.map { zone in
            guard let name = zone["zoneName"]?.stringValue, let token = zone["syncToken"]?.stringValue, let records = zone["records"]?.arrayValue
            else { throw ArchiveError("a zone of the snapshot lacks its zoneName, syncToken or records") }
            return Zone(zoneName: name, syncToken: token, records: records)
        }
    }
}
