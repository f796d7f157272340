import Crypto
import Foundation

/// The account export's format (docs/PRIVACY.md, "Export"): a tar file of
/// - `records/d<D>/z<Z>/<page>.json`: a page of at most 200 records of one zone, `{"database": {container,
///   environment, scope}, "zoneID": {…}, "records": [CloudKit record dictionaries]}`;
/// - `assets/d<D>/<sha256>`: an asset's bytes, named by their SHA-256 (the records' `fileChecksum`);
/// - `manifest.json`, last: the account, its databases and zones, every other file's size and SHA-256, and the
///   server's MAC over all of that (`Authenticator`).
/// The server writes it (`AccountExport`), the SDK checks it after a download, the server imports it.
public enum AccountArchive {
    public static let format = "stadiumcloud-account-export"
    public static let version = 1
    public static let manifestPath = "manifest.json"
    public static let recordsPerPage = 200

    /// `stadiumcloud-<account>.tar`, the account name kept to letters, digits, `-` and `_`.
    public static func fileName(for accountName: String) -> String {
        "stadiumcloud-" + String(accountName.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") ? $0 : "_" }) + ".tar"
    }

    public struct File: Sendable, Equatable {
        public var path: String
        public var size: Int64
        public var sha256: String

        public init(path: String, size: Int64, sha256: String) {
            self.path = path
            self.size = size
            self.sha256 = sha256
        }
    }

    public struct Database: Sendable, Equatable {
        /// `d1`, `d2`…: the folder of its files.
        public var folder: String
        public var container: String
        public var environment: String
        /// `private`, or `public` for the records the person created there (trip polls, votes).
        public var scope: String
        public var zones: [String]

        public init(folder: String, container: String, environment: String, scope: String, zones: [String]) {
            self.folder = folder
            self.container = container
            self.environment = environment
            self.scope = scope
            self.zones = zones
        }
    }

    public struct Manifest: Sendable, Equatable {
        public var accountName: String
        public var userRecordName: String
        public var exportedAtMs: Int64
        public var databases: [Database]
        public var files: [File]
        /// HMAC-SHA256 (hex) of `authenticatedText` under the exporting server's key; nil in an archive made before
        /// exports were signed.
        public var mac: String?

        public init(
            accountName: String, userRecordName: String, exportedAtMs: Int64, databases: [Database], files: [File], mac: String? = nil
        ) {
            self.accountName = accountName
            self.userRecordName = userRecordName
            self.exportedAtMs = exportedAtMs
            self.databases = databases
            self.files = files
            self.mac = mac
        }

        public var json: JSONValue {
            guard let mac, case .object(var members) = self.unsignedJSON else { return self.unsignedJSON }
            members["mac"] = .string(mac)
            return .object(members)
        }

        /// What the MAC covers: the manifest without it, keys sorted (`JSONWriter`), so a reader rebuilds the same text
        /// from what it parsed. The files' SHA-256s make it cover every byte of the archive.
        public var authenticatedText: String { JSONWriter.encode(self.unsignedJSON) }

        private var unsignedJSON: JSONValue {
            [
                "format": .string(AccountArchive.format), "version": .int(Int64(AccountArchive.version)),
                "account": ["name": .string(self.accountName), "userRecordName": .string(self.userRecordName)],
                "exportedAt": .int(self.exportedAtMs),
                "databases": .array(
                    self.databases.map {
                        [
                            "folder": .string($0.folder), "container": .string($0.container), "environment": .string($0.environment),
                            "scope": .string($0.scope), "zones": .array($0.zones.map(JSONValue.string)),
                        ]
                    }),
                "files": .array(self.files.map { ["path": .string($0.path), "size": .int($0.size), "sha256": .string($0.sha256)] }),
            ]
        }

        public init(json: JSONValue) throws {
            guard json["format"]?.stringValue == AccountArchive.format else { throw ArchiveError("this is not a StadiumCloud account export") }
            guard json["version"]?.int64Value == Int64(AccountArchive.version) else {
                throw ArchiveError(
                    "this export has format version \(json["version"].map(JSONWriter.encode) ?? "none"); this server reads \(AccountArchive.version)")
            }
            guard let name = json["account"]?["name"]?.stringValue, let user = json["account"]?["userRecordName"]?.stringValue,
                let databases = json["databases"]?.arrayValue, let files = json["files"]?.arrayValue
            else { throw ArchiveError("the manifest lacks its account, databases or files") }
            self.accountName = name
            self.userRecordName = user
            self.exportedAtMs = json["exportedAt"]?.int64Value ?? 0
            self.databases = try databases.map { database in
                guard let folder = database["folder"]?.stringValue, let container = database["container"]?.stringValue,
                    let environment = database["environment"]?.stringValue, let scope = database["scope"]?.stringValue,
                    let zones = database["zones"]?.arrayValue?.compactMap(\.stringValue)
                else { throw ArchiveError("a database of the manifest lacks its folder, container, environment, scope or zones") }
                return Database(folder: folder, container: container, environment: environment, scope: scope, zones: zones)
            }
            self.files = try files.map { file in
                guard let path = file["path"]?.stringValue, let size = file["size"]?.int64Value, let sha = file["sha256"]?.stringValue else {
                    throw ArchiveError("a file of the manifest lacks its path, size or sha256")
                }
                return File(path: path, size: size, sha256: sha)
            }
            self.mac = json["mac"]?.stringValue
        }
    }

    /// Signs a manifest with a key derived from the server's secret, and checks that an archive to import was signed
    /// with it: made by this server (or one sharing its database) and not changed since.
    public struct Authenticator: Sendable {
        private let key: SymmetricKey

        public init(signer: TokenSigner) { self.key = signer.derivedKey(for: "account export manifest") }

        public func signed(_ manifest: Manifest) -> Manifest {
            var signed = manifest
            signed.mac = self.mac(of: manifest)
            return signed
        }

        public func isAuthentic(_ manifest: Manifest) -> Bool {
            guard let given = manifest.mac.map({ Array($0.utf8) }) else { return false }
            let expected = Array(self.mac(of: manifest).utf8)
            guard given.count == expected.count else { return false }
            // Constant time: how much of a forged MAC was right must not show in how long the answer took.
            var difference: UInt8 = 0
            for (a, b) in zip(given, expected) { difference |= a ^ b }
            return difference == 0
        }

        private func mac(of manifest: Manifest) -> String {
            HMAC<SHA256>.authenticationCode(for: Array(manifest.authenticatedText.utf8), using: self.key).hexString
        }
    }

    /// Reads the whole archive once, hashing every file, and returns its manifest if every file it lists is there
    /// with that size and SHA-256 and nothing else is: a cut, damaged or altered archive is refused.
    public static func verify(at url: URL) throws -> Manifest {
        let reader = try Tar.Reader(url: url)
        var found: [String: File] = [:]
        var manifest: Manifest?
        while let entry = try reader.next() {
            guard found[entry.path] == nil, !(entry.path == manifestPath && manifest != nil) else {
                throw ArchiveError("\(entry.path) is in the archive twice")
            }
            if entry.path == manifestPath {
                guard entry.size <= 64 << 20 else { throw ArchiveError("the manifest is larger than 64 MiB") }
                var bytes = Data()
                while let piece = try reader.read(max: 1 << 20) { bytes += piece }
                manifest = try Manifest(json: try JSONValue.parse(bytes))
                continue
            }
            var hash = SHA256()
            var size: Int64 = 0
            while let piece = try reader.read(max: 1 << 20) {
                hash.update(data: piece)
                size += Int64(piece.count)
            }
            found[entry.path] = File(path: entry.path, size: size, sha256: hash.finalize().hexString)
        }
        guard let manifest else { throw ArchiveError("the archive has no manifest.json: it is cut short or not an export") }
        for file in manifest.files {
            guard let actual = found.removeValue(forKey: file.path) else { throw ArchiveError("\(file.path) is listed in the manifest but missing") }
            guard actual == file else { throw ArchiveError("\(file.path) does not have the size and SHA-256 the manifest lists: it was altered") }
        }
        if let extra = found.keys.sorted().first { throw ArchiveError("\(extra) is in the archive but not in its manifest") }
        return manifest
    }
}
