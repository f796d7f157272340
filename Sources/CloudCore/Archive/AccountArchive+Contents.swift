import Foundation

extension AccountArchive {
    /// A file of the archive as an import sees it.
    public enum Entry: Sendable, Equatable {
        /// `records/<folder>/z<Z>/<page>.json`
        case page(folder: String)
        /// `assets/<folder>/<sha256>`
        case asset(folder: String, checksum: String)
        case manifest
        case unknown

        public init(path: String) {
            let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            if path == AccountArchive.manifestPath {
                self = .manifest
            } else if parts.count == 4, parts[0] == "records", parts[3].hasSuffix(".json") {
                self = .page(folder: parts[1])
            } else if parts.count == 3, parts[0] == "assets" {
                self = .asset(folder: parts[1], checksum: parts[2])
            } else {
                self = .unknown
            }
        }
    }

    /// One page of records, each checked as a device's write of it would be (names, field types and values).
    public struct Page: Sendable {
        public var zoneName: String
        public var drafts: [RecordDraft]

        public init(_ bytes: Data, path: String) throws {
            do {
                let page = try JSONValue.parse(bytes)
                guard let zoneName = page["zoneID"]?["zoneName"]?.stringValue, let records = page["records"]?.arrayValue else {
                    throw ArchiveError("\(path) lacks its zoneID or records")
                }
                try FieldName.validate(zoneName, path: path, what: "zone name")
                self.zoneName = zoneName
                self.drafts = try records.enumerated().map { index, record in
                    let place = "\(path), record \(index + 1)"
                    guard let recordName = record["recordName"]?.stringValue, let recordType = record["recordType"]?.stringValue,
                        let fields = record["fields"]?.objectValue
                    else { throw ArchiveError("\(place) lacks its recordName, recordType or fields") }
                    try FieldName.validate(recordName, path: place, what: "record name")
                    try FieldName.validate(recordType, path: place, what: "record type")
                    guard fields.count <= FieldRules.maxFields else {
                        throw ArchiveError("\(place) has \(fields.count) fields; the limit is \(FieldRules.maxFields)")
                    }
                    var parsed: [String: FieldValue] = [:]
                    for (name, value) in fields {
                        try FieldName.validate(name, path: place)
                        guard let field = try FieldValue.parse(value, path: "\(place), field \(name)") else {
                            throw ArchiveError("\(place), field \(name) has no value")
                        }
                        parsed[name] = field
                    }
                    return RecordDraft(recordName: recordName, recordType: recordType, fields: parsed)
                }
            } catch let error as CloudError {
                throw ArchiveError(error.reason)
            }
        }
    }

    /// What an import of a verified archive will write, found by reading all of it and writing nothing: every page
    /// parsed and checked, every asset a record of a private database references present under its SHA-256.
    public struct Contents: Sendable {
        /// The assets of each private database, by folder.
        public var assets: [String: [File]] = [:]
        /// Records of public databases, which an import leaves out.
        public var publicRecords = 0

        /// `manifest` is what `verify(at:)` returned for the same file: each file's bytes have the SHA-256 it lists.
        public init(of url: URL, manifest: Manifest) throws {
            var databases: [String: Database] = [:]
            for database in manifest.databases {
                guard databases.updateValue(database, forKey: database.folder) == nil else {
                    throw ArchiveError("the manifest lists database folder \(database.folder) twice")
                }
                guard [DatabaseScope.private.rawValue, DatabaseScope.public.rawValue].contains(database.scope) else {
                    throw ArchiveError("database \(database.folder) of the manifest has scope \(database.scope.debugDescription)")
                }
                do {
                    for zone in database.zones { try FieldName.validate(zone, path: "manifest.json, database \(database.folder)", what: "zone name") }
                } catch let error as CloudError { throw ArchiveError(error.reason) }
            }
            let listed = Dictionary(manifest.files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
            // The first record (and its page) to reference each checksum, per private database, to name it if missing.
            var referenced: [String: [String: String]] = [:]
            var held: [String: Set<String>] = [:]
            let reader = try Tar.Reader(url: url)
            while let entry = try reader.next() {
                switch Entry(path: entry.path) {
                case .manifest:
                    continue
                case .unknown:
                    throw ArchiveError("\(entry.path) is not a file of an account export")
                case .asset(let folder, let checksum):
                    guard databases[folder]?.scope == DatabaseScope.private.rawValue else {
                        throw ArchiveError("\(entry.path) is not in a private database of the manifest")
                    }
                    guard let file = listed[entry.path], file.sha256 == checksum else {
                        throw ArchiveError("the bytes of \(entry.path) do not have the SHA-256 its name says")
                    }
                    self.assets[folder, default: []].append(file)
                    held[folder, default: []].insert(checksum)
                case .page(let folder):
                    guard let database = databases[folder] else { throw ArchiveError("\(entry.path) is not in a database of the manifest") }
                    var bytes = Data()
                    while let piece = try reader.read(max: 1 << 20) { bytes += piece }
                    let page = try Page(bytes, path: entry.path)
                    guard database.zones.contains(page.zoneName) else {
                        throw ArchiveError("\(entry.path) is of zone \(page.zoneName), which the manifest does not list")
                    }
                    guard database.scope == DatabaseScope.private.rawValue else {
                        self.publicRecords += page.drafts.count
                        continue
                    }
                    for draft in page.drafts {
                        for checksum in FieldValue.assetChecksums(in: draft.fields) where referenced[folder]?[checksum] == nil {
                            referenced[folder, default: [:]][checksum] = "record \(draft.recordName) of \(entry.path)"
                        }
                    }
                }
            }
            for (folder, checksums) in referenced.sorted(by: { $0.key < $1.key }) {
                if let (checksum, referrer) = checksums.sorted(by: { $0.key < $1.key }).first(where: { held[folder]?.contains($0.key) != true }) {
                    throw ArchiveError("\(referrer) references asset \(checksum), whose bytes are not in the archive (assets/\(folder)/\(checksum))")
                }
            }
        }
    }
}
