import CloudCore
import CloudSync
import Crypto
import Foundation

/// A photo of a visit: its metadata and a small thumbnail; the full-size bytes are downloaded on demand.
public struct Photo: Sendable, Equatable {
    public var recordName: String
    public var visitRecordName: String?
    public var caption: String?
    public var checksum: String?
    public var size: Int64?
    /// The thumbnail's checksum and size, when the device that added the photo made one.
    public var thumbnailChecksum: String?
    public var thumbnailSize: Int64?
    /// The photo's place in its visit's gallery (the person's order).
    public var orderIndex: Int
    /// When and where the picture was taken (ms since 1970; degrees), when known.
    public var captureDate: Int64?
    public var latitude, longitude: Double?
    /// False while its upload is unfinished on this device (it goes on at the next `sync()`).
    public var isUploaded: Bool
}

/// A photo added on this device whose upload has not finished: kept in the store, so the next `sync()` goes on with
/// it without the app calling `addPhoto` again.
struct PendingPhoto: Codable, Sendable {
    var recordName, visit, file: String
    var thumbnail, caption: String?
    var captureDate: Int64?
    var latitude, longitude: Double?
    var orderIndex: Int
}

extension StadiumCloudClient {
    /// Adds a photo to a visit: its record (caption, capture date and place, the next place in the gallery) and its
    /// bytes, uploaded in resumable chunks, with the device-made `thumbnail` (a few KB) first so other devices can
    /// show the gallery before any full-size download. If the upload is cut, the photo stays pending and the next
    /// `sync()` goes on with it (or run `addPhoto` again with the same file). The record is queued once its assets
    /// are uploaded; `sync()` sends it.
    @discardableResult
    public func addPhoto(
        _ file: URL, toVisit visitName: String, caption: String? = nil, thumbnail: URL? = nil, captureDate: Int64? = nil,
        location: (latitude: Double, longitude: Double)? = nil, progress: @Sendable (TransferProgress) -> Void = { _ in }
    ) async throws -> Photo {
        _ = try self.visitRecord(visitName)
        // Named after the visit and the file, so a rerun after an interruption finds its unfinished upload.
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        let identity = "\(visitName)|\(file.standardizedFileURL.path)|\((attributes[.size] as? NSNumber)?.int64Value ?? 0)"
        let name = "photo_" + SHA256.hash(data: Data(identity.utf8)).prefix(12).hexString
        // A rerun goes on with the unfinished photo; what it says again (caption, thumbnail, time, place) wins.
        var pending = try self.pendingPhotos()
        var job =
            try pending.first { $0.recordName == name }
            ?? PendingPhoto(recordName: name, visit: visitName, file: file.path, orderIndex: try self.nextOrderIndex(visitName))
        job.thumbnail = thumbnail?.path ?? job.thumbnail
        job.caption = caption ?? job.caption
        job.captureDate = captureDate ?? job.captureDate
        (job.latitude, job.longitude) = location.map { ($0.latitude, $0.longitude) } ?? (job.latitude, job.longitude)
        pending.removeAll { $0.recordName == name }
        try self.setPendingPhotos(pending + [job])
        return try await self.finishUpload(job, progress: progress)
    }

    /// Uploads a pending photo's assets and queues its record.
    func finishUpload(_ job: PendingPhoto, progress: @Sendable (TransferProgress) -> Void = { _ in }) async throws -> Photo {
        var fields: [String: FieldValue?] = [
            "visit": Self.reference(job.visit, action: .deleteSelf), "orderIndex": FieldValue(type: .int64, value: .int(Int64(job.orderIndex))),
        ]
        if let path = job.thumbnail {
            fields["thumbnail"] = try await self.engine.uploadAsset(
                file: URL(fileURLWithPath: path), recordType: "VisitPhoto", recordName: job.recordName, fieldName: "thumbnail")
        }
        fields["photo"] = try await self.engine.uploadAsset(
            file: URL(fileURLWithPath: job.file), recordType: "VisitPhoto", recordName: job.recordName, fieldName: "photo", progress: progress)
        if let caption = job.caption { fields["caption"] = FieldValue(type: .string, value: .string(caption)) }
        if let date = job.captureDate { fields["captureDate"] = FieldValue(type: .timestamp, value: .int(date)) }
        if let latitude = job.latitude, let longitude = job.longitude {
            fields["location"] = FieldValue(type: .location, value: ["latitude": .double(latitude), "longitude": .double(longitude)])
        }
        let record = try self.store.save(job.recordName, type: "VisitPhoto", fields: fields)
        try self.setPendingPhotos(try self.pendingPhotos().filter { $0.recordName != job.recordName })
        return Self.photo(from: record)
    }

    /// Goes on with the uploads an earlier run left unfinished (called by `sync()`); one that fails again stays
    /// pending. A photo whose visit or file is gone is dropped.
    /// - Returns: how many finished.
    @discardableResult
    func resumePendingPhotos() async throws -> Int {
        var finished = 0
        guard self.isSignedIn else { return 0 }
        for job in try self.pendingPhotos() {
            guard try self.store.record(job.visit, scope: .private) != nil, FileManager.default.fileExists(atPath: job.file) else {
                try self.setPendingPhotos(try self.pendingPhotos().filter { $0.recordName != job.recordName })
                continue
            }
            do {
                _ = try await self.finishUpload(job)
                finished += 1
            } catch let error as SyncError where error.code == ServerErrorCode.authenticationRequired.rawValue {
                // Signed out meanwhile (the account erased, the session ended): the sync says so, not only `isSignedIn`.
                throw error
            } catch {
                continue  // offline, the server away, or refused: it stays pending (`photos()` shows it) for the next sync
            }
        }
        return finished
    }

    /// Photos on this device, of one visit or of all, in the person's order; pending uploads included.
    public func photos(ofVisit visitName: String? = nil) throws -> [Photo] {
        let stored = try self.store.records(ofType: "VisitPhoto", scope: .private).map(Self.photo(from:))
        let pending = try self.pendingPhotos().filter { job in !stored.contains { $0.recordName == job.recordName } }.map { job in
            Photo(
                recordName: job.recordName, visitRecordName: job.visit, caption: job.caption, orderIndex: job.orderIndex,
                captureDate: job.captureDate, latitude: job.latitude, longitude: job.longitude, isUploaded: false)
        }
        return (stored + pending).filter { visitName == nil || $0.visitRecordName == visitName }
            .sorted { ($0.visitRecordName ?? "", $0.orderIndex, $0.recordName) < ($1.visitRecordName ?? "", $1.orderIndex, $1.recordName) }
    }

    /// Puts a visit's photos in this order (the rest keep theirs, after them).
    public func reorderPhotos(_ recordNames: [String], ofVisit visitName: String) throws {
        let others = try self.photos(ofVisit: visitName).map(\.recordName).filter { !recordNames.contains($0) }
        for (index, name) in (recordNames + others).enumerated() {
            guard let photo = try self.store.record(name, scope: .private), photo.recordType == "VisitPhoto", photo.reference("visit") == visitName
            else { continue }
            if photo.fields["orderIndex"]?.value.int64Value != Int64(index) {
                try self.store.save(name, type: "VisitPhoto", fields: ["orderIndex": FieldValue(type: .int64, value: .int(Int64(index)))])
            }
        }
    }

    /// Deletes a photo (a pending one is simply dropped); the server's asset collector removes its bytes once no
    /// record holds them.
    public func deletePhoto(_ recordName: String) throws {
        try self.setPendingPhotos(try self.pendingPhotos().filter { $0.recordName != recordName })
        guard try self.store.record(recordName, scope: .private)?.recordType == "VisitPhoto" else { return }
        try self.store.delete(recordName)
    }

    /// Downloads a photo's bytes to `destination` (resumable, checked against its SHA-256).
    public func downloadPhoto(_ recordName: String, to destination: URL, progress: @Sendable (TransferProgress) -> Void = { _ in }) async throws {
        try await self.engine.downloadAsset(recordName: recordName, fieldName: "photo", to: destination, progress: progress)
    }

    /// Downloads a photo's thumbnail to `destination`: what a gallery shows before any full-size download.
    public func downloadThumbnail(_ recordName: String, to destination: URL) async throws {
        try await self.engine.downloadAsset(recordName: recordName, fieldName: "thumbnail", to: destination)
    }

    func nextOrderIndex(_ visitName: String) throws -> Int {
        (try self.photos(ofVisit: visitName).map(\.orderIndex).max() ?? -1) + 1
    }

    func pendingPhotos() throws -> [PendingPhoto] {
        guard let text = try self.store.setting("pendingPhotos") else { return [] }
        return try JSONDecoder().decode([PendingPhoto].self, from: Data(text.utf8))
    }

    func setPendingPhotos(_ jobs: [PendingPhoto]) throws {
        try self.store.setSetting("pendingPhotos", jobs.isEmpty ? nil : String(decoding: try JSONEncoder().encode(jobs), as: UTF8.self))
    }

    static func photo(from record: LocalRecord) -> Photo {
        let asset = record.fields["photo"]?.value
        let thumbnail = record.fields["thumbnail"]?.value
        let location = record.fields["location"]?.value
        return Photo(
            recordName: record.recordName, visitRecordName: record.reference("visit"), caption: record.fields["caption"]?.value.stringValue,
            checksum: asset?["fileChecksum"]?.stringValue, size: asset?["size"]?.int64Value,
            thumbnailChecksum: thumbnail?["fileChecksum"]?.stringValue,
            thumbnailSize: thumbnail?["size"]?.int64Value, orderIndex: Int(record.fields["orderIndex"]?.value.int64Value ?? 0),
            captureDate: record.fields["captureDate"]?.value.int64Value, latitude: location?["latitude"]?.doubleValue,
            longitude: location?["longitude"]?.doubleValue, isUploaded: true)
    }
}
