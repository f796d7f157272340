import Synchronization

/// A flag one task sets and others read.
final class ManagedAtomicFlag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { self.value.withLock { $0 } }
    func set() { self.value.withLock { $0 = true } }
}
