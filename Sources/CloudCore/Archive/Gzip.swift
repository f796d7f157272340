import CZlib

/// gzip on the system's zlib, whole: what reads a snapshot (and tests and benchmarks reading compressed answers). The
/// server's streaming compressor is CloudHTTP's `Deflater`.
public enum Gzip {
    public struct Failure: Error {
        public var status: Int32
        public init(status: Int32) { self.status = status }
    }

    /// The bytes a gzip body stands for.
    public static func decompress(_ compressed: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { throw Failure(status: Z_STREAM_ERROR) }
        defer { inflateEnd(&stream) }
        var input = compressed
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var status: Int32 = Z_OK
        try input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            repeat {
                let produced = try chunk.withUnsafeMutableBufferPointer { target -> Int in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    guard status == Z_OK || status == Z_STREAM_END else { throw Failure(status: status) }
                    return target.count - Int(stream.avail_out)
                }
                output += chunk[..<produced]
            } while status != Z_STREAM_END
        }
        return output
    }
}

