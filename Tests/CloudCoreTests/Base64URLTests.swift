import CloudCore
import Foundation
import Testing

/// The byte-level base64url and hex against Foundation's, for every length that changes the padding.
@Suite struct Base64URLTests {
    @Test func matchesFoundationAndRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected)
            #expect(Base64URL.decode(expected) == bytes)
            #expect(bytes.hexString == bytes.map { String(format: "%02x", $0) }.joined())
        }
        #expect(Base64URL.decode("AAE=") == [0, 1], "padding is accepted")
        for bad in ["A", "AB+C", "AB/C", "A B", "ÅÅÅÅ"] { #expect(Base64URL.decode(bad) == nil, "\(bad)") }
    }
}
