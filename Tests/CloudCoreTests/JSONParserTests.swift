import CloudCore
import Testing

@Suite struct JSONParserTests {
    @Test func parsesEveryKindExactly() throws {
        let value = try JSONValue.parse(Array(#" {"a": [1, -2.5e3, true, false, null, "x\"\u00e9\ud83d\ude00\n"], "big": 9007199254740993} "#.utf8))
        #expect(value["a"] == [1, -2500.0, true, false, .null, "x\"é😀\n"])
        #expect(value["big"] == .int(9_007_199_254_740_993))
    }

    /// The writer's numbers and strings are written straight into its bytes: every edge as `String` would write it.
    @Test func writesNumbersAndEscapesAsTextWould() throws {
        for number: Int64 in [0, 7, -1, 10, 1_735_689_600_000, .max, .min] {
            #expect(JSONWriter.encode(.int(number)) == String(number))
        }
        var strings = JSONWriter()
        strings.numbersAsStrings = true
        strings.array { writer in
            writer.int(-42)
            writer.string("plain")
            writer.string("q\"b\\n\nt\t\u{1}é")
        }
        #expect(String(decoding: strings.bytes, as: UTF8.self) == #"["-42","plain","q\"b\\n\nt\t\u0001é"]"#)
        #expect(try JSONValue.parse(strings.bytes) == ["-42", "plain", "q\"b\\n\nt\t\u{1}é"])
    }

    /// Commas come from the byte before an item, so every shape of container gets them where JSON wants them.
    @Test func separatesItemsOfEveryContainerShape() throws {
        var writer = JSONWriter()
        writer.object { writer in
            writer.key("empty"); writer.object { _ in }
            writer.key("none"); writer.array { _ in }
            writer.key("nested");
            writer.array { writer in
                writer.array { _ in }
                writer.array { writer in
                    writer.int(1); writer.null()
                }
                writer.object { writer in
                    writer.key("a:"); writer.raw(#"{"b":[true]}"#)
                }
            }
            writer.key("{["); writer.string("[{:")
            writer.key(known: "known");
            writer.object { writer in
                writer.key(known: "first"); writer.null()
            }
            writer.key("last"); writer.bool(false)
        }
        let text = String(decoding: writer.bytes, as: UTF8.self)
        #expect(text == #"{"empty":{},"none":[],"nested":[[],[1,null],{"a:":{"b":[true]}}],"{[":"[{:","known":{"first":null},"last":false}"#)
        #expect(try JSONValue.parse(writer.bytes).objectValue?.count == 6)
    }

    /// Digits written straight into the answer are the ones `String(_:radix:)` makes (change tags are base 36).
    @Test(arguments: [0, 1, 35, 36, 1_295, -46_655, .max, .min] as [Int64])
    func writesDigitsInAnyRadix(_ value: Int64) {
        for radix in [10, 36] {
            var writer = JSONWriter()
            writer.array { writer in writer.string(digitsOf: value, radix: radix) }
            #expect(String(decoding: writer.bytes, as: UTF8.self) == "[\"\(String(value, radix: radix))\"]")
        }
    }

    @Test(arguments: [
        "", "{", "1e400", "[1,]", "{\"a\" 1}", "tru", "\"unterminated", "01x", "{\"a\":1} extra", "\"\\q\"",
        String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
    ])
    func rejectsMalformedInput(_ text: String) {
        #expect(throws: CloudError.self) { try JSONValue.parse(Array(text.utf8)) }
    }

    /// Latin-1 "é", a lone continuation byte, a truncated sequence and an encoded surrogate, with and without escapes
    /// beside them: refused, never stored with replacement characters.
    @Test(arguments: [[0xE9], [0x80], [0xE2, 0x82], [0xED, 0xA0, 0x80]] as [[UInt8]])
    func rejectsStringsThatAreNotUTF8(_ bad: [UInt8]) {
        for (before, after) in [("\"caf", "\""), ("\"caf\\n", "\"")] {
            #expect(throws: CloudError.self) { try JSONValue.parse(Array(before.utf8) + bad + Array(after.utf8)) }
        }
    }

    /// An escape may name only a whole Unicode scalar: a lone high or low surrogate, a high one followed by
    /// anything but a low one, or one cut off by the string's end is refused like raw bytes that are not UTF-8,
    /// never stored as U+FFFD (two different bad names would then be one record).
    @Test(arguments: [#"\ud800"#, #"\udc00"#, #"\uDBFF\u0041"#, #"\ud800\ud800"#, #"\ud800\n"#, #"\ud800x"#, #"a\udfff\ude00"#])
    func rejectsUnpairedSurrogateEscapes(_ escapes: String) throws {
        for json in ["\"\(escapes)\"", "\"caf\(escapes)é\"", "{\"\(escapes)\":1}"] {
            let error = #expect(throws: CloudError.self) { try JSONValue.parse(Array(json.utf8)) }
            #expect(error?.reason.contains("not valid UTF-8") == true, "\(json): \(String(describing: error))")
        }
        #expect(try JSONValue.parse(Array(#"["\ud83d\ude00", "\uD83D\uDE00", "\uffff"]"#.utf8)) == ["😀", "😀", "\u{FFFF}"])
    }
}
