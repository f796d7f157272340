/// Writes JSON text straight into a byte buffer: used for responses, where stored field JSON is spliced in
/// as it comes from the database instead of being parsed and encoded again.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// When true, INT64/DOUBLE/TIMESTAMP numbers are written as strings (`numbersAsStrings`).
    public var numbersAsStrings = false

    public init(capacity: Int = 1024) { self.bytes.reserveCapacity(capacity) }

    /// A writer holding JSON written before (a stored answer).
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Writes `{`, lets `members` write keys and values, writes `}`: an object cannot be left open.
    public mutating func object(_ members: (inout JSONWriter) throws -> Void) rethrows {
        try Self.object(in: &self, at: \.self, members)
    }

    /// Writes `[`, lets `items` write values, writes `]`.
    public mutating func array(_ items: (inout JSONWriter) throws -> Void) rethrows {
        try Self.array(in: &self, at: \.self, items)
    }

    /// `object(_:)` for a type that holds a writer (the HTTP layer's response writer), whose own helpers then
    /// work inside the object.
    @inlinable
    public static func object<Host>(in host: inout Host, at writer: WritableKeyPath<Host, JSONWriter>, _ members: (inout Host) throws -> Void)
        rethrows
    {
        host[keyPath: writer].open(UInt8(ascii: "{"))
        try members(&host)
        host[keyPath: writer].close(UInt8(ascii: "}"))
    }

    /// `array(_:)` for a type that holds a writer.
    @inlinable
    public static func array<Host>(in host: inout Host, at writer: WritableKeyPath<Host, JSONWriter>, _ items: (inout Host) throws -> Void) rethrows {
        host[keyPath: writer].open(UInt8(ascii: "["))
        try items(&host)
        host[keyPath: writer].close(UInt8(ascii: "]"))
    }

    // Internal, usable from the two inlinable helpers above (so the response writer's calls are specialized, not
    // dispatched through key paths): nothing outside opens a container without closing it.
    @usableFromInline mutating func open(_ bracket: UInt8) { self.separate(); self.bytes.append(bracket) }
    @usableFromInline mutating func close(_ bracket: UInt8) { self.bytes.append(bracket) }

    /// Writes `"key":`; the value written next belongs to it.
    public mutating func key(_ key: String) {
        self.separate()
        self.appendQuoted(key)
        self.bytes.append(UInt8(ascii: ":"))
    }

    /// `key(_:)` for a key written in the code (ASCII, nothing to escape): copied without a scan. A record's answer
    /// has a dozen such keys.
    public mutating func key(known key: StaticString) {
        self.separate()
        self.bytes.append(UInt8(ascii: "\""))
        self.bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        self.bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    /// A comma before a key or value unless it is the first of its container or a key's value. The last byte says
    /// which: every value and key ends in another byte than the `{`, `[` or `:` before a first item.
    private mutating func separate() {
        switch self.bytes.last {
        case nil, UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: ":"): break
        default: self.bytes.append(UInt8(ascii: ","))
        }
    }

    public mutating func string(_ value: String) { self.separate(); self.appendQuoted(value) }
    public mutating func int(_ value: Int64) {
        self.separate()
        if self.numbersAsStrings {
            self.bytes.append(UInt8(ascii: "\""))
            self.appendDigits(value)
            self.bytes.append(UInt8(ascii: "\""))
        } else {
            self.appendDigits(value)
        }
    }
    /// `value`'s digits in `radix` (lowercase letters) as a string, without making a `String` of them first.
    public mutating func string(digitsOf value: Int64, radix: Int) {
        self.separate()
        self.bytes.append(UInt8(ascii: "\""))
        self.appendDigits(value, radix: radix)
        self.bytes.append(UInt8(ascii: "\""))
    }
    public mutating func bool(_ value: Bool) { self.separate(); self.bytes.append(contentsOf: (value ? "true" : "false").utf8) }
    public mutating func null() { self.separate(); self.bytes.append(contentsOf: "null".utf8) }
    /// Appends already-encoded JSON text (for example a `jsonb` column) as one value.
    public mutating func raw(_ json: String) { self.separate(); self.bytes.append(contentsOf: json.utf8) }
    /// Appends JSON written before, by another writer (a value repeated in every item of a list).
    public mutating func raw(_ json: [UInt8]) { self.separate(); self.bytes.append(contentsOf: json) }

    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: self.null()
        case .bool(let flag): self.bool(flag)
        case .int(let number): self.int(number)
        case .double(let number):
            self.separate()
            let text = number.isFinite ? Self.format(number) : "null"
            if self.numbersAsStrings { self.appendQuoted(text) } else { self.bytes.append(contentsOf: text.utf8) }
        case .string(let text): self.string(text)
        case .array(let items):
            self.array { writer in
                for item in items { writer.value(item) }
            }
        case .object(let object):
            self.object { writer in
                for key in object.keys.sorted() {
                    writer.key(key)
                    writer.value(object[key]!)
                }
            }
        }
    }

    static func format(_ number: Double) -> String {
        if number.rounded() == number && abs(number) < 1e15 { return String(Int64(number)) + ".0" }
        return "\(number)"
    }

    private mutating func appendQuoted(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            self.bytes.append(UInt8(ascii: "\""))
            // Most strings need no escaping: copy them in one go.
            if !utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
                self.bytes.append(contentsOf: utf8)
            } else {
                for byte in utf8 { self.appendEscaped(byte) }
            }
            self.bytes.append(UInt8(ascii: "\""))
        }
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): self.bytes.append(contentsOf: [92, 34])
        case UInt8(ascii: "\\"): self.bytes.append(contentsOf: [92, 92])
        case 0x0A: self.bytes.append(contentsOf: [92, UInt8(ascii: "n")])
        case 0x0D: self.bytes.append(contentsOf: [92, UInt8(ascii: "r")])
        case 0x09: self.bytes.append(contentsOf: [92, UInt8(ascii: "t")])
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            self.bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        default: self.bytes.append(byte)
        }
    }

    /// A number's digits (decimal unless told), without making a `String` of them first.
    private mutating func appendDigits(_ value: Int64, radix: Int = 10) {
        if value < 0 { self.bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        let radix = UInt64(radix)
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // room for the 20 digits of the largest, written from the right
        withUnsafeMutableBytes(of: &digits) { buffer in
            var index = buffer.count
            repeat {
                index -= 1
                let digit = UInt8(magnitude % radix)
                buffer[index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
                magnitude /= radix
            } while magnitude > 0
            self.bytes.append(contentsOf: buffer[index...])
        }
    }

    /// Encodes one value to a `String`.
    public static func encode(_ value: JSONValue) -> String {
        var writer = JSONWriter(capacity: 256)
        writer.value(value)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
