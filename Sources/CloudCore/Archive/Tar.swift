import Foundation

/// The POSIX tar (ustar) format, as far as archives of plain files need it: the account export is a tar file, so any
/// `tar` reads it, and it can be written as a stream (each file's size goes before its bytes; nothing is written back).
public enum Tar {
    public static let blockSize = 512

    /// A regular file's header. Paths are ASCII, at most 100 bytes (ours are short by design); sizes below 8 GiB.
    public static func header(path: String, size: Int64, modifiedSeconds: Int64) throws -> [UInt8] {
        guard !path.isEmpty, path.utf8.count <= 100, path.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw ArchiveError("tar path \(path.debugDescription) is not 1 to 100 printable ASCII bytes")
        }
        guard size >= 0, size < 1 << 33 else { throw ArchiveError("\(path) is too large for a tar entry") }
        var block = [UInt8](repeating: 0, count: blockSize)
        func put(_ text: String, at offset: Int) { block.replaceSubrange(offset..<offset + text.utf8.count, with: Array(text.utf8)) }
        func octal(_ value: Int64, digits: Int) -> String {
            let text = String(value, radix: 8)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }
        put(path, at: 0)
        put("0000644", at: 100)
        put("0000000", at: 108)
        put("0000000", at: 116)
        put(octal(size, digits: 11), at: 124)
        put(octal(max(0, modifiedSeconds), digits: 11), at: 136)
        put("        ", at: 148)
        block[156] = UInt8(ascii: "0")
        put("ustar", at: 257)
        put("00", at: 263)
        let checksum = block.reduce(0) { $0 + Int64($1) }
        put(octal(checksum, digits: 6), at: 148)
        block[154] = 0
        return block
    }

    /// Zeros that fill a file's last block.
    public static func padding(after size: Int64) -> [UInt8] {
        let rest = Int(size % Int64(blockSize))
        return rest == 0 ? [] : [UInt8](repeating: 0, count: blockSize - rest)
    }

    /// Two zero blocks: the end of an archive.
    public static let end = [UInt8](repeating: 0, count: 2 * blockSize)

    /// Reads a tar file entry by entry, a piece at a time (never a whole entry in memory).
    public final class Reader {
        public struct Entry: Sendable, Equatable {
            public var path: String
            public var size: Int64
        }

        private let file: FileHandle
        private var remaining: Int64 = 0
        private var padding = 0

        public init(url: URL) throws { self.file = try FileHandle(forReadingFrom: url) }
        deinit { try? self.file.close() }

        /// The next regular file (other entry types are skipped), or nil at the end of the archive.
        public func next() throws -> Entry? {
            while let _ = try self.read(max: 1 << 20) {}
            try self.skip(self.padding)
            while true {
                let block = try self.exactly(Tar.blockSize, what: "a header")
                if block.allSatisfy({ $0 == 0 }) { return nil }
                guard Self.checksumMatches(block) else { throw ArchiveError("a tar header's checksum does not match: the file is damaged") }
                let path = String(decoding: block[0..<100].prefix { $0 != 0 }, as: UTF8.self)
                let prefix = String(decoding: block[345..<500].prefix { $0 != 0 }, as: UTF8.self)
                guard let size = Self.number(block[124..<136]) else { throw ArchiveError("a tar header's size is not a number") }
                self.remaining = size
                self.padding = Tar.padding(after: size).count
                if block[156] == UInt8(ascii: "0") || block[156] == 0 {
                    return Entry(path: prefix.isEmpty ? path : prefix + "/" + path, size: size)
                }
                try self.skip(Int(size) + self.padding)
                self.remaining = 0
            }
        }

        /// Up to `max` bytes more of the current entry; nil once it is all read.
        public func read(max: Int) throws -> Data? {
            guard self.remaining > 0 else { return nil }
            let data = try self.exactly(Int(min(Int64(max), self.remaining)), what: "a file's bytes")
            self.remaining -= Int64(data.count)
            return data
        }

        private func exactly(_ count: Int, what: String) throws -> Data {
            guard count > 0 else { return Data() }
            guard let data = try self.file.read(upToCount: count), data.count == count else {
                throw ArchiveError("the archive ends in the middle of \(what): it is cut short")
            }
            return data
        }

        private func skip(_ count: Int) throws {
            if count > 0 { _ = try self.exactly(count, what: "padding") }
            self.padding = 0
        }

        static func checksumMatches(_ block: Data) -> Bool {
            guard let stored = number(block[148..<156]) else { return false }
            var sum: Int64 = 0
            for (index, byte) in block.enumerated() { sum += (148..<156).contains(index) ? 32 : Int64(byte) }
            return sum == stored
        }

        static func number(_ field: Data) -> Int64? {
            // Octal digits, padded with spaces or NULs on either side by one tar or another.
            let digits = field.filter { $0 != 0 && $0 != 32 }
            return digits.isEmpty ? 0 : Int64(String(decoding: digits, as: UTF8.self), radix: 8)
        }
    }
}

/// A damaged, cut or forged archive.
public struct ArchiveError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
