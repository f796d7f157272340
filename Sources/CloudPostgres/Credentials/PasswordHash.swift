import _CryptoExtras
import CloudCore
import Crypto
import Foundation

/// Passwords stored as scrypt hashes in PHC form: `$scrypt$ln=15,r=8,p=3$<salt>$<hash>` (base64, no padding).
/// The parameters travel with the hash, so raising the cost later still verifies old hashes.
public struct PasswordHasher: Sendable {
    /// log2 of scrypt's N. 15 with r=8, p=3 is one of OWASP's recommended scrypt settings (32 MiB, ~0.1–0.3 s).
    public var log2Rounds: Int
    public var blockSize = 8
    public var parallelism = 3

    public init(log2Rounds: Int = 15) { self.log2Rounds = log2Rounds }

    public static let minimumPasswordLength = 10
    public static let maximumPasswordLength = 1024

    /// A new hash for `password` with a random salt.
    public func hash(_ password: String) throws -> String {
        try Self.check(password)
        let salt = CredentialStore.randomBytes(16)
        let key = try Self.derive(password, salt: salt, log2Rounds: self.log2Rounds, blockSize: self.blockSize, parallelism: self.parallelism)
        return "$scrypt$ln=\(self.log2Rounds),r=\(self.blockSize),p=\(self.parallelism)$\(Self.base64(salt))$\(Self.base64(key))"
    }

    /// Whether `password` matches `stored`; false for a malformed hash.
    public static func verify(_ password: String, against stored: String) -> Bool {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[1] == "scrypt", password.utf8.count <= maximumPasswordLength else { return false }
        var parameters: [Substring: Int] = [:]
        for pair in parts[2].split(separator: ",") {
            let kv = pair.split(separator: "=")
            guard kv.count == 2, let value = Int(kv[1]) else { return false }
            parameters[kv[0]] = value
        }
        guard let ln = parameters["ln"], let r = parameters["r"], let p = parameters["p"], (1...20).contains(ln),
            let salt = Self.unbase64(parts[3]), let expected = Self.unbase64(parts[4]),
            let actual = try? derive(password, salt: salt, log2Rounds: ln, blockSize: r, parallelism: p)
        else { return false }
        // Constant time: the comparison must not tell an attacker how many bytes matched.
        return actual.count == expected.count && zip(actual, expected).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    static func check(_ password: String) throws {
        let length = password.count
        guard length >= minimumPasswordLength, password.utf8.count <= maximumPasswordLength else {
            throw CloudError.badRequest("a password must be \(minimumPasswordLength) to \(maximumPasswordLength) characters")
        }
    }

    static func derive(_ password: String, salt: [UInt8], log2Rounds: Int, blockSize: Int, parallelism: Int) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8), salt: salt, outputByteCount: 32,
            rounds: 1 << log2Rounds, blockSize: blockSize, parallelism: parallelism)
        return key.withUnsafeBytes { Array($0) }
    }

    static func base64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    static func unbase64(_ text: Substring) -> [UInt8]? {
        var padded = String(text)
        while padded.count % 4 != 0 { padded += "=" }
        return Data(base64Encoded: padded).map(Array.init)
    }
}
