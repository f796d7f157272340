import ArgumentParser
import CloudCore
import CloudSync
import Foundation
import StadiumCloudClient

@main
struct ClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stadiumcloud-client",
        abstract: "A SportsTime device: sign in, sync, add and list visits, upload and download photos.",
        discussion: "Everything is kept in a local SQLite store (--store); edits work offline and `sync` sends them.",
        subcommands: [
            SignIn.self, SignOut.self, DeleteAccount.self, ExportAccount.self, Bootstrap.self, Sync.self, Status.self, Stadiums.self, Nickname.self, Favorite.self, Visits.self, Photos.self, Seasons.self,
            Games.self, Match.self, Achievements.self, Progress.self, Polls.self,
        ])
}

/// The local store every command opens.
struct StoreOptions: ParsableArguments {
    @Option(help: "The device's store (env STADIUMCLOUD_CLIENT_STORE; default .stadiumcloud/client.sqlite).")
    var store: String?

    var path: String { self.store ?? ProcessInfo.processInfo.environment["STADIUMCLOUD_CLIENT_STORE"] ?? ".stadiumcloud/client.sqlite" }

    func open(_ endpoint: ServerEndpoint? = nil) throws -> StadiumCloudClient {
        try StadiumCloudClient(storePath: self.path, endpoint: endpoint)
    }
}

/// Runs a command body, turning a sync error into a clear message and exit code 1.
func reporting(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as SyncError {
        var message = "error: \(error)"
        if error.needsSignIn { message += "\nsign in again: stadiumcloud-client signin ACCOUNT" }
        if error.code == SyncError.networkErrorCode { message += "\nthe server did not answer; edits stay queued for the next sync" }
        FileHandle.standardError.write(Data((message + "\n").utf8))
        throw ExitCode.failure
    }
}

/// One line that rewrites itself on a terminal.
func progressLine(_ text: String, done: Bool = false) {
    FileHandle.standardError.write(Data(("\r\u{1B}[K" + text + (done ? "\n" : "")).utf8))
}

func describe(_ progress: SyncProgress) -> String {
    switch progress {
    case .fetched(let scope, let zone, let records, let moreComing):
        "fetched \(records) from \(scope.rawValue)/\(zone)\(moreComing ? ", more coming" : "")"
    case .zoneReset(let scope, let zone): "\(scope.rawValue)/\(zone): change token expired, fetching the zone again"
    case .sent(let records, let waiting): "sent \(records), \(waiting) waiting"
    }
}

func describe(_ progress: TransferProgress) -> String {
    let mib = { (bytes: Int64) in String(format: "%.1f", Double(bytes) / 1_048_576) }
    let percent = progress.total == 0 ? 100 : Int(progress.bytes * 100 / progress.total)
    return "\(mib(progress.bytes)) of \(mib(progress.total)) MiB (\(percent)%)"
}

/// `YYYY-MM-DD` (UTC) or milliseconds since 1970.
func parseDate(_ text: String) throws -> Int64 {
    if let ms = Int64(text) { return ms }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withFullDate]
    guard let date = formatter.date(from: text) else { throw ValidationError("\(text) is not a date like 2025-06-01") }
    return Int64(date.timeIntervalSince1970 * 1000)
}

func formatDate(_ ms: Int64) -> String {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withFullDate]
    return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
}

struct Stadiums: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List venues (synced canonical data), optionally matching a text.")
    @OptionGroup var options: StoreOptions
    @Argument(help: "Part of a name, nickname, city or id.") var search: String?

    func run() async throws {
        try await reporting {
            for stadium in try self.options.open().stadiums(matching: self.search) {
                var line = "\(stadium.id)  \(stadium.name)"
                if let city = stadium.city { line += ", \(city)" }
                if let nickname = stadium.userNickname { line += "  “\(nickname)”" }
                if stadium.isFavorite { line += "  ★" }
                if stadium.isDeprecated { line += "  (deprecated)" }
                print(line)
            }
        }
    }
}

struct Nickname: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Set or clear your nickname for a venue (kept across canonical renames).")
    @OptionGroup var options: StoreOptions
    @Argument(help: "The venue id.") var stadium: String
    @Argument(help: "The nickname; leave out to clear it.") var nickname: String?

    func run() async throws {
        try await reporting {
            try self.options.open().setNickname(self.nickname, for: self.stadium)
            print("queued; run sync to send it")
        }
    }
}

struct Favorite: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Mark a venue as a favourite (or not, with --off).")
    @OptionGroup var options: StoreOptions
    @Argument(help: "The venue id.") var stadium: String
    @Flag(help: "Remove the mark.") var off = false

    func run() async throws {
        try await reporting {
            try self.options.open().setFavorite(!self.off, for: self.stadium)
            print("queued; run sync to send it")
        }
    }
}

struct Visits: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add, list, annotate and delete visits.", subcommands: [Add.self, List.self, Notes.self, Delete.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue a visit (works offline).")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The venue id, e.g. stadium_mlb_oracle_park.") var stadium: String
        @Option(help: "YYYY-MM-DD (default today).") var date: String?
        @Option(help: "game, tour or other.") var type = "game"
        @Option(help: "Free text.") var notes: String?
        @Option(help: "The sport it was for (baseball, basketball, ice_hockey…): at a shared venue, the league it counts for.")
        var sport: String?
        @Option(help: "The canonical game id (`games DATE` lists them).") var game: String?

        func run() async throws {
            try await reporting {
                let date = try self.date.map(parseDate) ?? Int64(Date().timeIntervalSince1970 * 1000)
                let visit = try self.options.open().addVisit(
                    stadiumID: self.stadium, date: date, type: self.type, notes: self.notes,
                    details: VisitDetails(sport: self.sport, gameID: self.game, source: "manual"))
                print("\(visit.recordName) queued; run sync to send it")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the visits on this device, newest first.")
        @OptionGroup var options: StoreOptions

        func run() async throws {
            try await reporting {
                let client = try self.options.open()
                for visit in try client.visits() {
                    let stadium = try client.stadium(visit.stadiumID)
                    var line = "\(formatDate(visit.visitDate))  \(visit.recordName)  \(stadium?.name ?? visit.stadiumNameAtVisit ?? visit.stadiumID)"
                    if let nickname = stadium?.userNickname { line += " “\(nickname)”" }
                    if let then = visit.stadiumNameAtVisit, let now = stadium?.name, then != now { line += " (then \(then))" }
                    line += "  \(visit.visitType)"
                    if let notes = visit.notes { line += "  \(notes)" }
                    if !visit.isSynced { line += "  [not synced]" }
                    print(line)
                }
            }
        }
    }

    struct Notes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set (or clear) a visit's notes.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The visit's record name.") var visit: String
        @Argument(help: "The notes; leave out to clear them.") var notes: String?

        func run() async throws {
            try await reporting {
                try self.options.open().setNotes(self.notes, forVisit: self.visit)
                print("queued; run sync to send it")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a visit (its photos go with it on the server).")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The visit's record name.") var visit: String

        func run() async throws {
            try await reporting {
                try self.options.open().deleteVisit(self.visit)
                print("queued; run sync to send it")
            }
        }
    }
}

struct Photos: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload, list, download and delete visit photos.", subcommands: [Add.self, List.self, Download.self, Delete.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Upload a photo for a visit (resumes an interrupted upload of the same file), then sync its record.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The visit's record name.") var visit: String
        @Argument(help: "The photo file.") var file: String
        @Option(help: "A caption.") var caption: String?
        @Option(help: "A small thumbnail file made from the photo (other devices show it before downloading the photo).")
        var thumbnail: String?

        func run() async throws {
            try await reporting {
                let client = try self.options.open()
                let photo = try await client.addPhoto(
                    URL(fileURLWithPath: self.file), toVisit: self.visit, caption: self.caption,
                    thumbnail: self.thumbnail.map(URL.init(fileURLWithPath:))
                ) {
                    progressLine("uploading " + describe($0))
                }
                progressLine("uploaded \(photo.recordName) (\(photo.size ?? 0) bytes, sha256 \(photo.checksum ?? "?"))", done: true)
                let report = try await client.sync { progressLine(describe($0)) }
                progressLine("synced: \(report.sent) sent, \(report.waiting) waiting", done: true)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List photos, of one visit or of all.")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The visit's record name.") var visit: String?

        func run() async throws {
            try await reporting {
                for photo in try self.options.open().photos(ofVisit: self.visit) {
                    print("\(photo.recordName)  visit \(photo.visitRecordName ?? "?")  \(photo.size ?? 0) bytes  \(photo.caption ?? "")")
                }
            }
        }
    }

    struct Download: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Download a photo to a file (resumable, checked against its SHA-256).")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The photo's record name.") var photo: String
        @Argument(help: "Where to write it.") var file: String

        func run() async throws {
            try await reporting {
                try await self.options.open().downloadPhoto(self.photo, to: URL(fileURLWithPath: self.file)) {
                    progressLine("downloading " + describe($0))
                }
                progressLine("downloaded \(self.photo) to \(self.file)", done: true)
            }
        }
    }
}

extension Photos {
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a photo (the server removes its bytes once nothing holds them).")
        @OptionGroup var options: StoreOptions
        @Argument(help: "The photo's record name.") var photo: String

        func run() async throws {
            try await reporting {
                try self.options.open().deletePhoto(self.photo)
                print("queued; run sync to send it")
            }
        }
    }
}
