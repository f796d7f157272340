/// A strict JSON parser over UTF-8 bytes into `JSONValue`. Integers stay exact (`Int64`) when they fit;
/// nesting is limited so hostile input cannot exhaust the stack.
struct JSONParser {
    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    /// CloudKit bodies nest about eight levels (operation, record, fields, value, list, location); 64 leaves room
    /// for any real client and keeps the parser's recursion shallow.
    static let maxDepth = 64

    struct Failure: Error { let reason: String }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw Failure(reason: "unexpected text after the JSON value") }
        return value
    }

    private mutating func skipWhitespace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
            default: return
            }
        }
    }

    private func peek() throws -> UInt8 {
        guard self.index < self.bytes.count else { throw Failure(reason: "unexpected end of JSON") }
        return self.bytes[self.index]
    }

    private mutating func value() throws -> JSONValue {
        switch try self.peek() {
        case UInt8(ascii: "{"): return try self.object()
        case UInt8(ascii: "["): return try self.array()
        case UInt8(ascii: "\""): return .string(try self.string())
        case UInt8(ascii: "t"): try self.literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try self.literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try self.literal("null"); return .null
        default: return try self.number()
        }
    }

    private mutating func literal(_ word: String) throws {
        for expected in word.utf8 {
            guard self.index < self.bytes.count, self.bytes[self.index] == expected else { throw Failure(reason: "invalid literal") }
            self.index += 1
        }
    }

    private mutating func enter() throws {
        self.depth += 1
        guard self.depth <= Self.maxDepth else { throw Failure(reason: "JSON nested deeper than \(Self.maxDepth) levels") }
    }

    private mutating func object() throws -> JSONValue {
        try self.enter()
        self.index += 1
        var object: [String: JSONValue] = [:]
        self.skipWhitespace()
        if try self.peek() == UInt8(ascii: "}") {
            self.index += 1
            self.depth -= 1
            return .object(object)
        }
        while true {
            self.skipWhitespace()
            guard try self.peek() == UInt8(ascii: "\"") else { throw Failure(reason: "expected a string key") }
            let key = try self.string()
            self.skipWhitespace()
            guard try self.peek() == UInt8(ascii: ":") else { throw Failure(reason: "expected ':'") }
            self.index += 1
            self.skipWhitespace()
            object[key] = try self.value()
            self.skipWhitespace()
            let next = try self.peek()
            self.index += 1
            if next == UInt8(ascii: "}") { break }
            guard next == UInt8(ascii: ",") else { throw Failure(reason: "expected ',' or '}'") }
        }
        self.depth -= 1
        return .object(object)
    }

    private mutating func array() throws -> JSONValue {
        try self.enter()
        self.index += 1
        var items: [JSONValue] = []
        self.skipWhitespace()
        if try self.peek() == UInt8(ascii: "]") {
            self.index += 1
            self.depth -= 1
            return .array(items)
        }
        while true {
            self.skipWhitespace()
            items.append(try self.value())
            self.skipWhitespace()
            let next = try self.peek()
            self.index += 1
            if next == UInt8(ascii: "]") { break }
            guard next == UInt8(ascii: ",") else { throw Failure(reason: "expected ',' or ']'") }
        }
        self.depth -= 1
        return .array(items)
    }

    private mutating func string() throws -> String {
        self.index += 1
        let start = self.index
        // Fast path: no escapes.
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            if byte == UInt8(ascii: "\"") {
                let text = try Self.text(self.bytes[start..<self.index])
                self.index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw Failure(reason: "control character in string") }
            self.index += 1
        }
        var scalars = Array(self.bytes[start..<self.index])
        while true {
            guard self.index < self.bytes.count else { throw Failure(reason: "unterminated string") }
            let byte = self.bytes[self.index]
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try Self.text(scalars)
            case UInt8(ascii: "\\"):
                let escape = try self.peek()
                self.index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    scalars.append(contentsOf: Array(String(Character(try self.escapedScalar())).utf8))
                default:
                    throw Failure(reason: "invalid escape")
                }
            default:
                guard byte >= 0x20 else { throw Failure(reason: "control character in string") }
                scalars.append(byte)
            }
        }
    }

    /// Refuses bytes that are not UTF-8 rather than storing them with replacement characters, which would lose
    /// what the client sent without telling it.
    private static func text(_ bytes: some Collection<UInt8>) throws -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Failure(reason: "a string is not valid UTF-8") }
        return text
    }

    /// The scalar a `\u` escape names (its `\u` already read), a surrogate pair taken together. An unpaired
    /// surrogate names no scalar: refused like raw bytes that are not UTF-8, because storing it as U+FFFD would
    /// make different names one.
    private mutating func escapedScalar() throws -> Unicode.Scalar {
        let code = try self.hex4()
        guard (0xD800..<0xDC00).contains(code) else {
            guard let scalar = Unicode.Scalar(code) else { throw Self.unpairedSurrogate(code) }
            return scalar
        }
        guard self.index + 1 < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\\"),
            self.bytes[self.index + 1] == UInt8(ascii: "u")
        else { throw Self.unpairedSurrogate(code) }
        self.index += 2
        let low = try self.hex4()
        guard (0xDC00..<0xE000).contains(low) else { throw Self.unpairedSurrogate(code) }
        // A high and a low surrogate always make a scalar in U+10000...U+10FFFF.
        return Unicode.Scalar(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))!
    }

    private static func unpairedSurrogate(_ code: UInt32) -> Failure {
        Failure(reason: "a string is not valid UTF-8: the escape \\u\(String(code, radix: 16, uppercase: true)) is an unpaired surrogate")
    }

    private mutating func hex4() throws -> UInt32 {
        guard self.index + 4 <= self.bytes.count else { throw Failure(reason: "short \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            let digit: UInt32
            switch byte {
            case 48...57: digit = UInt32(byte - 48)
            case 65...70: digit = UInt32(byte - 55)
            case 97...102: digit = UInt32(byte - 87)
            default: throw Failure(reason: "invalid \\u escape")
            }
            code = code << 4 | digit
            self.index += 1
        }
        return code
    }

    private mutating func number() throws -> JSONValue {
        let start = self.index
        var isInteger = true
        if self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "-") { self.index += 1 }
        let digitsStart = self.index
        while self.index < self.bytes.count {
            let byte = self.bytes[self.index]
            if byte >= 48 && byte <= 57 {
                self.index += 1
            } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            {
                isInteger = false
                self.index += 1
            } else {
                break
            }
        }
        guard self.index > digitsStart else { throw Failure(reason: "invalid value") }
        let text = String(decoding: self.bytes[start..<self.index], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .int(integer) }
        guard let double = Double(text), double.isFinite else { throw Failure(reason: "invalid number \(text)") }
        return .double(double)
    }
}
