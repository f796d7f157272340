import CloudCore
import Crypto
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Bytes moved so far out of the whole.
public struct TransferProgress: Sendable, Equatable {
    public var bytes: Int64
    public var total: Int64

    public init(bytes: Int64, total: Int64) {
        self.bytes = bytes
        self.total = total
    }
}

extension SyncEngine {
    /// Uploads `file` for `fieldName` of a private record and answers the ASSETID value to save in it. The file is
    /// sent in chunks of `configuration.chunkSize` bytes (never read whole), each at an explicit `Upload-Offset`; after a
    /// failure, or in a later run of the app, the upload resumes where the server's `HEAD` says it stopped. The
    /// server checks the whole file's SHA-256 at the end.
    public func uploadAsset(
        file: URL, recordType: String, recordName: String, fieldName: String, zone: String = defaultZoneName,
        progress: @Sendable (TransferProgress) -> Void = { _ in }
    ) async throws -> FieldValue {
        let (checksum, size) = try FileDigest.sha256(of: file)
        var offset: Int64 = 0
        var state = try self.store.upload(recordName: recordName, fieldName: fieldName)
        // Upload URLs live 15 minutes: an older one is not worth asking about.
        if let saved = state, saved.checksum != checksum || Timestamp.now - saved.createdAt > 14 * 60_000 { state = nil }
        if let saved = state {
            do {
                offset = try await self.service.uploadedOffset(url: saved.url)
            } catch let error as SyncError where (400..<500).contains(error.status) {
                state = nil
            }
        }
        let url: String
        if let saved = state {
            url = saved.url
        } else {
            let answer = try await self.service.call(
                .private, "assets/upload",
                [
                    "zoneID": ["zoneName": .string(zone)],
                    "tokens": [["recordName": .string(recordName), "recordType": .string(recordType), "fieldName": .string(fieldName)]],
                ])
            guard let given = answer["tokens"]?[0]?["url"]?.stringValue else {
                throw SyncError(code: "UNKNOWN_ERROR", reason: "assets/upload answered no upload URL", status: 200)
            }
            url = given
            try self.store.setUpload(
                .init(checksum: checksum, size: size, url: url, createdAt: Timestamp.now), recordName: recordName, fieldName: fieldName)
            offset = 0
        }
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        progress(TransferProgress(bytes: offset, total: size))
        var failures = 0
        while true {
            try handle.seek(toOffset: UInt64(offset))
            let chunk = try handle.read(upToCount: self.configuration.chunkSize) ?? Data()
            let isLast = offset + Int64(chunk.count) >= size
            do {
                let answer = try await self.service.uploadChunk(url: url, chunk, offset: offset, total: size, checksum: isLast ? checksum : nil)
                if let stored = answer["singleFile"], let receipt = stored["receipt"] {
                    try self.store.setUpload(nil, recordName: recordName, fieldName: fieldName)
                    progress(TransferProgress(bytes: size, total: size))
                    return FieldValue(
                        type: .asset, value: ["fileChecksum": stored["fileChecksum"] ?? .string(checksum), "size": .int(size), "receipt": receipt])
                }
                offset = answer["uploadOffset"]?.int64Value ?? offset + Int64(chunk.count)
                failures = 0
                progress(TransferProgress(bytes: offset, total: size))
            } catch let error as SyncError where error.status == 0 || error.status >= 500 || error.code == ServerErrorCode.conflict.rawValue {
                // Lost, cut or out of step: ask the server how much it has and go on from there.
                failures += 1
                guard failures < self.service.retry.attempts else { throw error }
                try await self.service.retry.pause(after: failures - 1, retryAfter: error.retryAfter)
                offset = try await self.service.uploadedOffset(url: url)
            }
        }
    }

    /// Downloads the asset in `fieldName` of a private record to `destination`, in ranged chunks appended to
    /// `destination.part` (so an interrupted download resumes), and checks its SHA-256 before moving it into
    /// place. An expired download URL is renewed by reading the record again.
    public func downloadAsset(
        recordName: String, fieldName: String, zone: String = defaultZoneName, to destination: URL,
        progress: @Sendable (TransferProgress) -> Void = { _ in }
    ) async throws {
        var renewed = false
        while true {
            guard let value = try self.store.record(recordName, scope: .private, zone: zone)?.fields[fieldName], value.type == .asset,
                let checksum = value.value["fileChecksum"]?.stringValue, let size = value.value["size"]?.int64Value
            else {
                throw SyncError(
                    code: ServerErrorCode.notFound.rawValue, reason: "\(recordName) has no asset in \(fieldName) on this device; sync first",
                    status: 0)
            }
            do {
                guard let url = value.value["downloadURL"]?.stringValue else {
                    throw SyncError(code: ServerErrorCode.accessDenied.rawValue, reason: "no download URL yet", status: 403)
                }
                try await self.download(
                    url: url.replacingOccurrences(of: "${f}", with: "asset"), checksum: checksum, size: size, to: destination, progress: progress)
                return
            } catch let error as SyncError where error.status == 403 && !renewed {
                renewed = true
                let found = try await self.service.call(
                    .private, "records/lookup",
                    [
                        "zoneID": ["zoneName": .string(zone)], "records": [["recordName": .string(recordName)]],
                    ])
                try self.store.merge(serverRecords: found["records"]?.arrayValue ?? [], zone: zone)
                try self.store.renewDownloadURLs(from: found["records"]?.arrayValue ?? [], zone: zone)
            }
        }
    }

    func download(url: String, checksum: String, size: Int64, to destination: URL, progress: @Sendable (TransferProgress) -> Void) async throws {
        let part = destination.appendingPathExtension("part")
        if !FileManager.default.fileExists(atPath: part.path) { _ = FileManager.default.createFile(atPath: part.path, contents: nil) }
        let handle = try FileHandle(forUpdating: part)
        defer { try? handle.close() }
        var offset = Int64(try handle.seekToEnd())
        if offset > size {
            try handle.truncate(atOffset: 0)
            offset = 0
        }
        // What an earlier run wrote is hashed again, so the check covers the whole file.
        var hash = SHA256()
        try handle.seek(toOffset: 0)
        while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty { hash.update(data: data) }
        progress(TransferProgress(bytes: offset, total: size))
        while offset < size {
            let data = try await self.service.downloadRange(
                url: url, from: offset, count: Int(min(Int64(self.configuration.chunkSize), size - offset)))
            try handle.write(contentsOf: data)
            hash.update(data: data)
            offset += Int64(data.count)
            progress(TransferProgress(bytes: offset, total: size))
        }
        try handle.synchronize()
        guard hash.finalize().hexString == checksum.lowercased() else {
            try? FileManager.default.removeItem(at: part)
            throw SyncError(code: "BAD_CHECKSUM", reason: "the downloaded bytes do not match the asset's SHA-256; download again", status: 0)
        }
        if FileManager.default.fileExists(atPath: destination.path) { try FileManager.default.removeItem(at: destination) }
        try FileManager.default.moveItem(at: part, to: destination)
    }
}

extension CloudKitWebService {
    /// `POST` one chunk to an upload URL at `offset` of `total` bytes; the last chunk carries the checksum.
    func uploadChunk(url: String, _ data: Data, offset: Int64, total: Int64, checksum: String?) async throws -> JSONValue {
        var request = URLRequest(url: try Self.url(url))
        request.httpMethod = "POST"
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        if total > 0 {
            request.setValue(String(offset), forHTTPHeaderField: "Upload-Offset")
            request.setValue(String(total), forHTTPHeaderField: "Upload-Length")
        }
        if let checksum { request.setValue(checksum, forHTTPHeaderField: "X-StadiumCloud-Checksum") }
        request.httpBody = data
        return try await self.exchange(request, retrying: false)
    }

    /// `HEAD` on an upload URL: how many bytes the server holds.
    func uploadedOffset(url: String) async throws -> Int64 {
        var request = URLRequest(url: try Self.url(url))
        request.httpMethod = "HEAD"
        let (_, response) = try await self.send(request, retrying: true)
        return response.value(forHTTPHeaderField: "Upload-Offset").flatMap { Int64($0) } ?? 0
    }

    /// `GET` `count` bytes from `offset` of a download URL.
    func downloadRange(url: String, from offset: Int64, count: Int) async throws -> Data {
        var request = URLRequest(url: try Self.url(url))
        request.setValue("bytes=\(offset)-\(offset + Int64(count) - 1)", forHTTPHeaderField: "Range")
        let (data, _) = try await self.send(request, retrying: true)
        guard data.count == count else {
            throw SyncError(code: SyncError.networkErrorCode, reason: "the download answered \(data.count) bytes instead of \(count)", status: 0)
        }
        return data
    }

    static func url(_ text: String) throws -> URL {
        guard let url = URL(string: text) else { throw SyncError(code: "BAD_REQUEST", reason: "not a URL: \(text)", status: 0) }
        return url
    }
}

/// SHA-256 of a file, read in 1 MiB pieces.
enum FileDigest {
    static func sha256(of file: URL) throws -> (checksum: String, size: Int64) {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var hash = SHA256()
        var size: Int64 = 0
        while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
            hash.update(data: data)
            size += Int64(data.count)
        }
        return (hash.finalize().hexString, size)
    }
}
