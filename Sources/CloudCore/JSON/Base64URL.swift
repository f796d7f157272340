/// Base64url without padding (RFC 4648 §5), byte by byte: tokens are encoded and decoded on every request, and
/// Foundation's base64 plus three string replacements cost more than the rest of an empty poll's CPU.
public enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(index) }
        return values
    }()

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = second == nil ? nil : iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            out.append(alphabet[Int(group >> 18 & 63)])
            out.append(alphabet[Int(group >> 12 & 63)])
            if second != nil { out.append(alphabet[Int(group >> 6 & 63)]) }
            if third != nil { out.append(alphabet[Int(group & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of `text`, or nil when it is not base64url (padding `=` at the end is accepted).
    public static func decode(_ text: String) -> [UInt8]? {
        var utf8 = Substring(text).utf8[...]
        while utf8.last == UInt8(ascii: "=") { utf8 = utf8.dropLast() }
        guard utf8.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count * 3 / 4)
        var group: UInt32 = 0
        var count = 0
        for byte in utf8 {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            count += 1
            if count == 4 {
                out += [UInt8(group >> 16 & 0xFF), UInt8(group >> 8 & 0xFF), UInt8(group & 0xFF)]
                (group, count) = (0, 0)
            }
        }
        if count == 3 {
            out += [UInt8(group >> 10 & 0xFF), UInt8(group >> 2 & 0xFF)]
        } else if count == 2 {
            out.append(UInt8(group >> 4 & 0xFF))
        }
        return out
    }
}
