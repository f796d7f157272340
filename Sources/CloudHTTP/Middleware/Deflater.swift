import CloudCore
import CZlib
import NIOCore

/// One zlib deflate stream producing gzip framing (answers, snapshots).
final class Deflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)

    init() {
        self.stream.initialize(to: z_stream())
        // windowBits 15 + 16: gzip header and trailer; level 6 is zlib's default balance of size and speed.
        let status = deflateInit2_(self.stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "zlib could not start a deflate stream (\(status))")
    }

    deinit {
        deflateEnd(self.stream)
        self.stream.deallocate()
    }

    /// Compresses `input`; with `finish` also flushes and writes the gzip trailer.
    func deflate(_ input: ByteBuffer, finish: Bool) throws -> ByteBuffer {
        var input = input
        var output = ByteBuffer()
        try input.withUnsafeMutableReadableBytes { source in
            self.stream.pointee.next_in = source.baseAddress?.assumingMemoryBound(to: Bytef.self)
            self.stream.pointee.avail_in = uInt(source.count)
            repeat {
                output.reserveCapacity(minimumWritableBytes: max(4096, source.count / 4))
                _ = try output.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { target in
                    self.stream.pointee.next_out = target.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    self.stream.pointee.avail_out = uInt(target.count)
                    let status = CZlib.deflate(self.stream, finish ? Z_FINISH : Z_NO_FLUSH)
                    guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else { throw Gzip.Failure(status: status) }
                    return target.count - Int(self.stream.pointee.avail_out)
                }
            } while self.stream.pointee.avail_out == 0 || (finish && self.stream.pointee.avail_in > 0)
        }
        return output
    }
}
