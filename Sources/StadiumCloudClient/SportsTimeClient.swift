import CloudCore
import CloudSync
import Crypto
import Foundation

/// A visit to a venue, as the app shows it.
public struct Visit: Sendable, Equatable {
    public var recordName: String
    /// The canonical venue id (`stadium_mlb_oracle_park`), which never changes.
    public var stadiumID: String
    /// The venue's name on the day of the visit, kept as the person saw it.
    public var stadiumNameAtVisit: String?
    /// Milliseconds since 1970.
    public var visitDate: Int64
    /// `game`, `tour` or `other`.
    public var visitType: String
    public var notes: String?
    /// Whether the server has this version yet.
    public var isSynced: Bool
    /// Game, score, seat and provenance (`VisitDetails`), and which of them the person corrected.
    public var details = VisitDetails()
    public var correctedFields: Set<String> = []
}

/// A canonical venue with the person's own fields for it.
public struct Stadium: Sendable, Equatable {
    public var id: String
    public var name: String
    public var city: String?
    /// Soft-deleted by the operator (the venue closed or the team moved on); visits to it stay.
    public var isDeprecated: Bool
    public var userNickname: String?
    public var isFavorite: Bool
}

/// The SportsTime client SDK: visits, photos and venue preferences kept in a local store and synced with a
/// StadiumCloud server. Reads are local and work offline; edits are queued and sent by `sync()`.
public final class StadiumCloudClient: Sendable {
    public let store: LocalStore
    public let engine: SyncEngine

    /// The person's nickname and favourite flag for a venue live in a private `StadiumPreference` record and are
    /// shown on the canonical `Stadium` record, where canonical imports never overwrite them.
    public static let projections = [FieldProjection(sourceType: "StadiumPreference", reference: "stadium", fields: ["userNickname", "isFavorite"])]
    /// Canonical ids never change: the merge keeps the first value (schema.json marks them immutable).
    public static let publicOwners: [String: FieldOwner] = ["canonicalId": .immutable, "uuid": .immutable]

    /// Opens (or creates) the store at `storePath`. `endpoint` is remembered in the store; later opens may omit it.
    public init(
        storePath: String, endpoint: ServerEndpoint? = nil, transport: any HTTPTransport = URLSessionTransport(), retry: RetryPolicy = RetryPolicy(),
        configuration: SyncConfiguration = SyncConfiguration()
    ) throws {
        let store = try LocalStore(path: storePath, projections: Self.projections, publicOwners: Self.publicOwners)
        let endpoint = try endpoint ?? Self.savedEndpoint(store)
        try store.setSetting(
            "endpoint",
            JSONWriter.encode([
                "baseURL": .string(endpoint.baseURL.absoluteString), "container": .string(endpoint.container),
                "environment": .string(endpoint.environment), "apiToken": .string(endpoint.apiToken),
            ]))
        let service = CloudKitWebService(endpoint: endpoint, transport: transport, tokens: store, deviceID: try store.deviceID(), retry: retry)
        // The game seasons this device follows (`follow(seasons:)`) are public zones next to the default one.
        var configuration = configuration
        configuration.publicZones += Self.publicZones(seasons: Self.followedSeasons(in: store)).dropFirst()
        self.store = store
        self.engine = SyncEngine(service: service, store: store, configuration: configuration)
    }

    static func savedEndpoint(_ store: LocalStore) throws -> ServerEndpoint {
        guard let text = try store.setting("endpoint"), let json = try? JSONValue.parse(Array(text.utf8)),
            let base = json["baseURL"]?.stringValue.flatMap(URL.init(string:)), let container = json["container"]?.stringValue,
            let environment = json["environment"]?.stringValue, let apiToken = json["apiToken"]?.stringValue
        else {
            throw SyncError(
                code: "BAD_REQUEST",
                reason: "this store knows no server yet: sign in first (stadiumcloud-client signin ACCOUNT --server URL --api-token TOKEN)", status: 0
            )
        }
        return ServerEndpoint(baseURL: base, container: container, environment: environment, apiToken: apiToken)
    }

    // MARK: session

    /// Signs in with a password; the session's token is kept in the store.
    @discardableResult
    public func signIn(accountName: String, password: String) async throws -> String {
        let answer = try await self.engine.service.signIn(accountName: accountName, password: password)
        try self.store.setSetting("userRecordName", answer.userRecordName)
        return answer.userRecordName
    }

    /// Uses a web auth token obtained elsewhere (`stadiumcloud accounts create` prints one).
    public func useWebAuthToken(_ token: String) throws { try self.store.setWebAuthToken(token) }

    /// Ends the session on the server and forgets it here; queued edits stay and are sent after the next sign-in.
    public func signOut() async throws { try await self.engine.service.signOut() }

    public var isSignedIn: Bool { (try? self.store.webAuthToken()) != nil }

    /// Erases the signed-in person's account on the server and everything in it (docs/PRIVACY.md), confirmed with
    /// its password, then forgets the person on this device: their records, queued edits and session. Other devices
    /// of the account are signed out within a second.
    public func deleteAccount(password: String) async throws {
        _ = try await self.engine.service.call(.private, "users/delete", ["password": .string(password)])
        try self.store.forgetPerson()
    }

    /// Loads the public data the app bundles (a snapshot `stadiumcloud snapshot make` wrote and signed, docs/SCALING.md
    /// "Snapshots") before any network: canonical stadiums, teams and aliases, and the followed seasons' games it holds.
    /// A file not signed by one of `trustedKeys`, or altered, is refused and nothing is stored. The next sync fetches
    /// only what changed since the snapshot. Returns the records stored (0 when the device had synced already).
    @discardableResult
    public func bootstrap(fromSnapshot file: URL, trustedKeys: [P256.Signing.PublicKey]) async throws -> Int {
        let snapshot = try PublicSnapshot(file: Array(try Data(contentsOf: file)), trustedKeys: trustedKeys)
        return try await self.engine.bootstrap(from: snapshot)
    }

    /// Downloads the signed-in person's whole account, records and photos' bytes, as one archive (docs/PRIVACY.md,
    /// "Export") to `destination`, written as it arrives, then checks every file against the archive's manifest. The
    /// file appears only once whole and checked; a download that fails leaves nothing, and is started again.
    @discardableResult
    public func exportAccount(to destination: URL) async throws -> AccountArchive.Manifest {
        let partial = destination.appendingPathExtension("partial")
        defer { try? FileManager.default.removeItem(at: partial) }
        try await self.engine.service.download(.private, "users/export", [:], to: partial)
        let manifest: AccountArchive.Manifest
        do { manifest = try AccountArchive.verify(at: partial) } catch let error as ArchiveError {
            throw SyncError(code: SyncError.networkErrorCode, reason: "the export arrived incomplete or damaged (\(error)); export again", status: 0)
        }
        try? FileManager.default.removeItem(at: destination)
        try FileManager.default.moveItem(at: partial, to: destination)
        return manifest
    }

    /// Goes on with unfinished photo uploads, fetches canonical and private changes, then sends queued edits. When
    /// records arrived, visits logged before the canonical data get their venue names and achievements are
    /// recomputed (local edits recompute them as they happen); what that changes is sent in a second round.
    @discardableResult
    public func sync(progress: @escaping @Sendable (SyncProgress) -> Void = { _ in }) async throws -> SyncReport {
        try await self.resumePendingPhotos()
        var report = try await self.engine.sync(progress: progress)
        guard report.fetched + report.deleted + report.merged + report.dropped > 0 else { return report }
        let filled = try self.fillVisitNames()
        let changed = try self.updateAchievements()
        if filled > 0 || !changed.isEmpty {
            let second = try await self.engine.sync(progress: progress)
            report.fetched += second.fetched
            report.sent += second.sent
            report.merged += second.merged
            report.waiting = second.waiting
            report.refused = second.refused
        }
        return report
    }

    /// Syncs whenever the server says something changed (`changes/wait`; polling where the server cannot wait),
    /// until the task is cancelled. Each sync's report goes to `synced`.
    public func syncContinuously(synced: @escaping @Sendable (Result<SyncReport, any Error>) -> Void = { _ in }) async {
        await self.engine.syncContinuously(using: { try await self.sync() }, synced: synced)
    }

    // MARK: venues

    /// Venues whose name, nickname, city or id contains `text` (all without), by name.
    public func stadiums(matching text: String? = nil) throws -> [Stadium] {
        let all = try self.store.records(ofType: "Stadium", scope: .public).map(Self.stadium(from:))
        guard let text = text?.lowercased(), !text.isEmpty else { return all.sorted { $0.name < $1.name } }
        return all.filter { stadium in
            [stadium.id, stadium.name, stadium.city ?? "", stadium.userNickname ?? ""].contains { $0.lowercased().contains(text) }
        }.sorted { $0.name < $1.name }
    }

    public func stadium(_ id: String) throws -> Stadium? {
        try self.store.record(id, scope: .public).flatMap { $0.recordType == "Stadium" ? Self.stadium(from: $0) : nil }
    }

    /// The venue's name on a day (ms since 1970): the alias valid then, else its current name.
    public func stadiumName(_ id: String, on date: Int64) throws -> String? {
        try self.aliasName(of: id, aliasType: "StadiumAlias", ownerField: "stadium", on: date) ?? self.stadium(id)?.name
    }

    /// The name of the live alias of a venue or team valid on `date` (ms), if any.
    func aliasName(of id: String, aliasType: String, ownerField: String, on date: Int64) throws -> String? {
        for alias in try self.store.records(ofType: aliasType, scope: .public, referencing: id, in: ownerField) {
            let from = alias.fields["validFrom"]?.value.int64Value ?? .min
            let until = alias.fields["validUntil"]?.value.int64Value ?? .max
            if from <= date, date < until, alias.fields["deprecatedAt"] == nil, let name = alias.fields["name"]?.value.stringValue { return name }
        }
        return nil
    }

    static func stadium(from record: LocalRecord) -> Stadium {
        Stadium(
            id: record.recordName, name: record.fields["name"]?.value.stringValue ?? record.recordName,
            city: record.fields["city"]?.value.stringValue, isDeprecated: record.fields["deprecatedAt"] != nil,
            userNickname: record.fields["userNickname"]?.value.stringValue, isFavorite: (record.fields["isFavorite"]?.value.int64Value ?? 0) != 0)
    }

    /// Sets (nil: clears) the person's nickname for a venue.
    public func setNickname(_ nickname: String?, for stadiumID: String) throws {
        try self.savePreference(stadiumID, ["userNickname": nickname.map { FieldValue(type: .string, value: .string($0)) }])
    }

    public func setFavorite(_ isFavorite: Bool, for stadiumID: String) throws {
        try self.savePreference(stadiumID, ["isFavorite": FieldValue(type: .int64, value: .int(isFavorite ? 1 : 0))])
    }

    /// One preference record per venue, named after it, so two devices that set one for the same venue meet on the
    /// same record (EXISTS, then a merge) instead of making two.
    func savePreference(_ stadiumID: String, _ fields: [String: FieldValue?]) throws {
        _ = try self.requireStadium(stadiumID)
        var fields = fields
        fields["stadium"] = Self.reference(stadiumID)
        try self.store.save("preference_" + stadiumID, type: "StadiumPreference", fields: fields)
    }

    /// The venue's current name; an id this device does not know is refused once canonical data has been synced.
    func requireStadium(_ id: String) throws -> Stadium? {
        if let stadium = try self.stadium(id) { return stadium }
        if try self.store.hasRecords(ofType: "Stadium", scope: .public) {
            throw SyncError(code: "BAD_REQUEST", reason: "no venue has the id \(id); `stadiums SEARCH` lists them", status: 0)
        }
        return nil
    }

    // MARK: visits

    /// Queues a new visit; `sync()` sends it. `details` are the person's own (see `setDetails`).
    @discardableResult
    public func addVisit(stadiumID: String, date: Int64, type: String = "game", notes: String? = nil, details: VisitDetails = VisitDetails())
        throws -> Visit
    {
        try Self.checkVisitType(type)
        let stadium = try self.requireStadium(stadiumID)
        var fields: [String: FieldValue?] = [
            "stadium": Self.reference(stadiumID),
            "visitDate": FieldValue(type: .timestamp, value: .int(date)),
            "visitType": FieldValue(type: .string, value: .string(type)),
        ]
        if stadium != nil, let name = try self.stadiumNameAtVisit(stadiumID, date) {
            fields["stadiumNameAtVisit"] = FieldValue(type: .string, value: .string(name))
        }
        if let notes { fields["notes"] = FieldValue(type: .string, value: .string(notes)) }
        fields.merge(details.fields) { _, new in new }
        let record = try self.store.save("visit_" + UUID().uuidString.lowercased(), type: "StadiumVisit", fields: fields)
        try self.updateAchievements()
        return Self.visit(from: record, synced: false)
    }

    /// Sets a visit's details (nil values are left as they are). Fields the person sets are remembered in
    /// `correctedFields`, and an `.automatic` fill (trip planner, photo import, score lookup) never overwrites them:
    /// the seed's "preserve the original".
    public func setDetails(_ details: VisitDetails, forVisit recordName: String, by author: VisitDetails.Author = .person) throws {
        let visit = try self.visitRecord(recordName)
        let corrected = Set(visit.fields["correctedFields"]?.value.arrayValue?.compactMap(\.stringValue) ?? [])
        var fields: [String: FieldValue?] = details.fields
        switch author {
        case .automatic:
            fields = fields.filter { !corrected.contains($0.key) }
        case .person:
            let all = corrected.union(fields.keys).sorted()
            fields["correctedFields"] = FieldValue(type: .stringList, value: .array(all.map(JSONValue.string)))
        }
        guard !fields.isEmpty else { return }
        try self.store.save(recordName, type: "StadiumVisit", fields: fields)
        try self.updateAchievements()
    }

    /// Moves a visit to another day or changes its type; its venue name of the day follows unless the person set it.
    public func setDate(_ date: Int64, type: String? = nil, forVisit recordName: String) throws {
        let visit = try self.visitRecord(recordName)
        if let type { try Self.checkVisitType(type) }
        var fields: [String: FieldValue?] = ["visitDate": FieldValue(type: .timestamp, value: .int(date))]
        if let type { fields["visitType"] = FieldValue(type: .string, value: .string(type)) }
        let corrected = visit.fields["correctedFields"]?.value.arrayValue?.contains(.string("stadiumNameAtVisit")) ?? false
        if !corrected, let stadium = visit.reference("stadium"), let name = try self.stadiumNameAtVisit(stadium, date) {
            fields["stadiumNameAtVisit"] = FieldValue(type: .string, value: .string(name))
        }
        try self.store.save(recordName, type: "StadiumVisit", fields: fields)
        try self.updateAchievements()
    }

    /// The visit with this name on this device, or NOT_FOUND.
    func visitRecord(_ recordName: String) throws -> LocalRecord {
        guard let visit = try self.store.record(recordName, scope: .private), visit.recordType == "StadiumVisit" else {
            throw SyncError(code: ServerErrorCode.notFound.rawValue, reason: "no visit \(recordName) on this device", status: 0)
        }
        return visit
    }

    static func checkVisitType(_ type: String) throws {
        guard ["game", "tour", "other"].contains(type) else {
            throw SyncError(code: "BAD_REQUEST", reason: "a visit type is game, tour or other, not \(type)", status: 0)
        }
    }

    /// The venue's name on the visit's day at the venue (its local date, as alias dates are).
    func stadiumNameAtVisit(_ stadiumID: String, _ date: Int64) throws -> String? {
        let zone = try self.store.record(stadiumID, scope: .public)?.fields["timeZone"]?.value.stringValue.flatMap(TimeZone.init(identifier:))
        let offset = Int64(zone?.secondsFromGMT(for: Date(timeIntervalSince1970: Double(date) / 1000)) ?? 0) * 1000
        let local = date + offset
        let day = (local >= 0 ? local / 86_400_000 : (local - 86_399_999) / 86_400_000) * 86_400_000
        return try self.stadiumName(stadiumID, on: day)
    }

    /// Fills `stadiumNameAtVisit` of visits logged before the canonical data arrived, once it has.
    /// - Returns: how many visits it filled.
    @discardableResult
    func fillVisitNames() throws -> Int {
        var filled = 0
        for visit in try self.store.records(ofType: "StadiumVisit", scope: .private) where visit.fields["stadiumNameAtVisit"] == nil {
            guard let stadium = visit.reference("stadium"), let date = visit.fields["visitDate"]?.value.int64Value,
                let name = try self.stadiumNameAtVisit(stadium, date)
            else { continue }
            try self.store.save(
                visit.recordName, type: "StadiumVisit", fields: ["stadiumNameAtVisit": FieldValue(type: .string, value: .string(name))])
            filled += 1
        }
        return filled
    }

    /// Changes a visit's notes (nil clears them).
    public func setNotes(_ notes: String?, forVisit recordName: String) throws {
        _ = try self.visitRecord(recordName)
        try self.store.save(recordName, type: "StadiumVisit", fields: ["notes": notes.map { FieldValue(type: .string, value: .string($0)) }])
    }

    /// Deletes a visit; achievements it earned are revoked if no other visit earns them.
    public func deleteVisit(_ recordName: String) throws {
        try self.store.delete(recordName)
        try self.updateAchievements()
    }

    /// The account's visits on this device, newest first.
    public func visits() throws -> [Visit] {
        try self.store.records(ofType: "StadiumVisit", scope: .private).map { Self.visit(from: $0, synced: $0.changeTag != nil) }
            .sorted { ($0.visitDate, $0.recordName) > ($1.visitDate, $1.recordName) }
    }

    static func visit(from record: LocalRecord, synced: Bool) -> Visit {
        Visit(
            recordName: record.recordName, stadiumID: record.reference("stadium") ?? "",
            stadiumNameAtVisit: record.fields["stadiumNameAtVisit"]?.value.stringValue,
            visitDate: record.fields["visitDate"]?.value.int64Value ?? 0, visitType: record.fields["visitType"]?.value.stringValue ?? "other",
            notes: record.fields["notes"]?.value.stringValue, isSynced: synced, details: VisitDetails(record.fields),
            correctedFields: Set(record.fields["correctedFields"]?.value.arrayValue?.compactMap(\.stringValue) ?? []))
    }

    static func reference(_ recordName: String, action: Reference.Action = .none) -> FieldValue {
        FieldValue(type: .reference, value: Reference(recordName: recordName, action: action).json)
    }
}
