import CloudCore
import CloudRuntime
import Crypto
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Server-to-server keys: ECDSA P-256 public keys for the operator's programs, and the replay guard on their
/// signatures (docs/AUTH.md).
extension CredentialStore {
    /// Registers an ECDSA P-256 public key (PEM) and returns its key id (64 hex digits, like CloudKit's).
    public func registerServerKey(publicKeyPEM: String, label: String?, logger: Logger) async throws -> String {
        let key: P256.Signing.PublicKey
        do {
            key = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        } catch {
            throw CloudError.badRequest("not an ECDSA P-256 public key in PEM form (openssl ec -in eckey.pem -pubout)")
        }
        let keyID = Self.hex(Self.randomBytes(32))
        _ = try await translatingDatabaseErrors {
            try await self.client.query(
                "INSERT INTO server_keys (key_id, public_key, label, created_ms) VALUES (\(keyID), \(Data(key.x963Representation)), \(label), \(self.clock.now))",
                logger: logger)
        }
        return keyID
    }

    /// The public key of a live server-to-server key id, or `nil`.
    public func serverKey(id keyID: String, logger: Logger) async throws -> P256.Signing.PublicKey? {
        let value = try await self.cached(Data(("key:" + keyID).utf8)) { _ in
            // The lookup also notes the key's last use, at most once a minute (the console shows it).
            let now = self.clock.now
            let rows = try await self.client.query(
                """
                WITH used AS (
                    UPDATE server_keys SET last_used_ms = \(now) WHERE key_id = \(keyID) AND revoked_ms IS NULL
                    AND coalesce(last_used_ms, 0) < \(now - 60_000))
                SELECT public_key FROM server_keys WHERE key_id = \(keyID) AND revoked_ms IS NULL
                """, logger: logger)
            for try await bytes in rows.decode(Data.self) {
                if let key = try? P256.Signing.PublicKey(x963Representation: bytes) { return .serverKey(key) }
            }
            return .none
        }
        if case .serverKey(let key) = value { return key }
        return nil
    }

    public func revokeServerKey(id keyID: String, logger: Logger) async throws -> Bool {
        let found = try await self.touchesRow(
            "UPDATE server_keys SET revoked_ms = \(self.clock.now) WHERE key_id = \(keyID) AND revoked_ms IS NULL RETURNING 1", logger: logger)
        self.cache.withLock { $0.removeAll() }
        return found
    }

    public func serverKeys(logger: Logger) async throws -> [ServerKeyInfo] {
        let rows = try await translatingDatabaseErrors {
            try await self.client.query(
                "SELECT key_id, label, created_ms, revoked_ms, last_used_ms FROM server_keys ORDER BY created_ms", logger: logger)
        }
        var keys: [ServerKeyInfo] = []
        for try await (id, label, created, revoked, used) in rows.decode((String, String?, Int64, Int64?, Int64?).self) {
            keys.append(ServerKeyInfo(keyID: id, label: label, createdMs: created, revokedMs: revoked, lastUsedMs: used))
        }
        return keys
    }

    /// Records a signature as used; false when it was seen before (a replay).
    public func acceptSignatureOnce(_ signature: [UInt8], logger: Logger) async throws -> Bool {
        try await self.touchesRow(
            """
            INSERT INTO seen_signatures (signature_hash, seen_ms) VALUES (\(Data(SHA256.hash(data: signature))), \(self.clock.now))
            ON CONFLICT DO NOTHING RETURNING 1
            """, logger: logger)
    }
}
