import CloudCore
import Foundation

/// A `multipart/form-data` body read whole: the console's dataset upload (a folder of JSON files, bounded by the
/// route). Asset uploads never come here: they stream (`MultipartFileStream`).
struct MultipartForm {
    struct Part {
        var name: String
        /// The file's name as the browser sent it: a path relative to the chosen folder for a folder upload.
        var filename: String?
        var body: ArraySlice<UInt8>
    }

    var parts: [Part] = []

    /// The text of the first field named `name`.
    func field(_ name: String) -> String? {
        self.parts.first { $0.name == name && $0.filename == nil }.map { String(decoding: $0.body, as: UTF8.self) }
    }

    /// - Throws: `CloudError.badRequest` when the body is not multipart with this boundary.
    init(_ bytes: [UInt8], boundary: String) throws {
        let malformed = CloudError.badRequest("the multipart body is malformed or ends early")
        let delimiter = Array("--\(boundary)".utf8)
        let newline = Array("\r\n".utf8)
        guard var index = byteIndex(of: delimiter, in: bytes) else { throw malformed }
        while true {
            index += delimiter.count
            // "--" after a delimiter ends the body.
            if bytes[index...].starts(with: Array("--".utf8)) { return }
            guard bytes[index...].starts(with: newline), let headersEnd = byteIndex(of: Array("\r\n\r\n".utf8), in: bytes, from: index) else {
                throw malformed
            }
            let headers = String(decoding: bytes[(index + 2)..<headersEnd], as: UTF8.self)
            let start = headersEnd + 4
            guard let end = byteIndex(of: newline + delimiter, in: bytes, from: start) else { throw malformed }
            guard let name = Self.parameter("name", in: headers) else { throw malformed }
            self.parts.append(Part(name: name, filename: Self.parameter("filename", in: headers), body: bytes[start..<end]))
            index = end + 2
        }
    }

    /// A quoted parameter of the part's `Content-Disposition` header.
    static func parameter(_ key: String, in headers: String) -> String? {
        for line in headers.split(separator: "\r\n") where line.lowercased().hasPrefix("content-disposition:") {
            for parameter in line.split(separator: ";").dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == key else { continue }
                return pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }
}
