import Foundation

/// The result of `records/modify`.
public struct ModifyResult: Sendable {
    public var outcomes: [OperationOutcome]
    /// True when the batch was atomic and failed: nothing was written.
    public var atomicFailed: Bool
    /// With an idempotency key: the answer to send, stored with the write (or, for a retry, the first answer;
    /// then `outcomes` is empty).
    public var answer: StoredAnswer?

    public init(outcomes: [OperationOutcome], atomicFailed: Bool, answer: StoredAnswer? = nil) {
        self.outcomes = outcomes
        self.atomicFailed = atomicFailed
        self.answer = answer
    }
}

/// A write's HTTP answer as it is kept for retries.
public struct StoredAnswer: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// A client's `Idempotency-Key` for one write: the first answer is stored in the write's transaction, and a
/// retry with the same key gets it back instead of writing again.
public struct IdempotentWrite: Sendable {
    public var key: String
    /// SHA-256 of the request, so a key reused for a different request is refused rather than misanswered.
    public var requestHash: Data
    /// Makes the answer from the result, inside the transaction.
    public var answer: @Sendable (ModifyResult) throws -> StoredAnswer

    public init(key: String, requestHash: Data, answer: @escaping @Sendable (ModifyResult) throws -> StoredAnswer) {
        self.key = key
        self.requestHash = requestHash
        self.answer = answer
    }
}
