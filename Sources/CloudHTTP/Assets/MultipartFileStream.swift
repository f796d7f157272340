import CloudCore
import NIOCore

/// The bytes of the file part of a `multipart/form-data` body, streamed: the part named `files` (OpenCloudKit) or
/// `file` (CloudKitWebServices), or else the first part with a filename. Only a delimiter's length is held back
/// between chunks, so the upload is never in memory whole. The rest of the body is read and dropped.
struct MultipartFileStream<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element == ByteBuffer {
    typealias Element = ByteBuffer
    let base: Base
    let boundary: String

    /// The boundary of a `multipart/form-data` content type, or nil for other types.
    static func boundary(of contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/form-data") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return value.isEmpty || value.count > 200 ? nil : value
            }
        }
        return nil
    }

    func makeAsyncIterator() -> Iterator { Iterator(base: self.base.makeAsyncIterator(), boundary: self.boundary) }

    struct Iterator: AsyncIteratorProtocol {
        enum State { case preamble, headers, content, skipping, done }
        var base: Base.AsyncIterator
        var buffer: [UInt8] = []
        var state = State.preamble
        let first: [UInt8]
        let delimiter: [UInt8]
        static var maxHeaderBytes: Int { 16 * 1024 }

        init(base: Base.AsyncIterator, boundary: String) {
            self.base = base
            self.first = Array("--\(boundary)".utf8)
            self.delimiter = Array("\r\n--\(boundary)".utf8)
        }

        mutating func next() async throws -> ByteBuffer? {
            while true {
                switch self.state {
                case .done:
                    return nil
                case .preamble:
                    if let index = byteIndex(of: self.first, in: self.buffer),
                        let end = byteIndex(of: Array("\r\n".utf8), in: self.buffer, from: index)
                    {
                        self.buffer.removeFirst(end + 2)
                        self.state = .headers
                        continue
                    }
                    guard self.buffer.count < Self.maxHeaderBytes, try await self.fill() else { throw Self.malformed }
                case .headers:
                    if let end = byteIndex(of: Array("\r\n\r\n".utf8), in: self.buffer) {
                        let headers = String(decoding: self.buffer[..<end], as: UTF8.self).lowercased()
                        self.buffer.removeFirst(end + 4)
                        self.state = Self.isFilePart(headers) ? .content : .skipping
                        continue
                    }
                    guard self.buffer.count < Self.maxHeaderBytes, try await self.fill() else { throw Self.malformed }
                case .content, .skipping:
                    if let index = byteIndex(of: self.delimiter, in: self.buffer) {
                        let part = Array(self.buffer[..<index])
                        if self.state == .content {
                            self.state = .done
                            while try await self.base.next() != nil {}  // drop the rest of the body
                            return part.isEmpty ? nil : ByteBuffer(bytes: part)
                        }
                        // Skipped a part: the next one's headers follow the delimiter line.
                        guard let end = byteIndex(of: Array("\r\n".utf8), in: self.buffer, from: index + self.delimiter.count) else {
                            guard try await self.fill() else { throw Self.malformed }
                            continue
                        }
                        if self.buffer[(index + self.delimiter.count)..<end].starts(with: Array("--".utf8)) { throw Self.noFile }
                        self.buffer.removeFirst(end + 2)
                        self.state = .headers
                        continue
                    }
                    // Everything but a possible start of the delimiter can go out now.
                    let safe = self.buffer.count - (self.delimiter.count - 1)
                    if self.state == .content, safe > 0 {
                        let out = ByteBuffer(bytes: self.buffer[..<safe])
                        self.buffer.removeFirst(safe)
                        return out
                    }
                    if self.state == .skipping, safe > 0 { self.buffer.removeFirst(safe) }
                    guard try await self.fill() else { throw Self.malformed }
                }
            }
        }

        /// Reads the next chunk into the buffer; false at the end of the body.
        mutating func fill() async throws -> Bool {
            guard let chunk = try await self.base.next() else { return false }
            self.buffer.append(contentsOf: chunk.readableBytesView)
            return true
        }

        static func isFilePart(_ headers: String) -> Bool {
            headers.contains("name=\"files\"") || headers.contains("name=\"file\"") || headers.contains("filename=")
        }

        static var malformed: CloudError { CloudError.badRequest("the multipart body is malformed or ends early") }
        static var noFile: CloudError { CloudError.badRequest("the multipart body has no part named files or file") }

    }
}

/// Where `needle` first occurs in `haystack` at or after `start`.
func byteIndex(of needle: [UInt8], in haystack: [UInt8], from start: Int = 0) -> Int? {
    guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
    var index = start
    while index <= haystack.count - needle.count {
        if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
        index += 1
    }
    return nil
}

import Foundation
