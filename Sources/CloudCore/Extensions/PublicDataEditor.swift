import Logging

/// What the operator console may change in the public database through a layer above the engine (the sports
/// layer's dataset import and merge rules), so an edit in the console follows the same rules as an import.
public protocol PublicDataEditor: Sendable {
    /// The dataset folder the console offers to import.
    var defaultDatasetPath: String { get }

    /// Imports the dataset folder at `path` into the public database of `scope`; with `dryRun` it only says what
    /// would change. `progress` gets the steps done, the steps in all, and what is being done.
    func importDataset(
        at path: String, into scope: SchemaScope, dryRun: Bool, logger: Logger, progress: @escaping @Sendable (Int, Int, String) -> Void
    ) async throws -> PublicDataChanges

    /// Sets one system field of one public record to `value` (text as an operator types it) through the import's
    /// merge: a rename keeps the old name as an alias, immutable and user fields are never changed.
    func edit(
        recordName: String, zone: String, field: String, value: String, in scope: SchemaScope, by operatorName: String, dryRun: Bool,
        logger: Logger
    ) async throws -> PublicDataChanges
}

/// What an import or an edit of public data changed (or, in a dry run, would change).
public struct PublicDataChanges: Sendable, Equatable {
    /// One line per change, in the order they are written.
    public var lines: [String]
    /// How many changes of each kind (created, updated, deprecated, alias added).
    public var counts: [String: Int]
    /// Why nothing was written: the source was refused. Empty when the changes were applied (or would be).
    public var refused: [String]

    public init(lines: [String] = [], counts: [String: Int] = [:], refused: [String] = []) {
        self.lines = lines
        self.counts = counts
        self.refused = refused
    }
}
