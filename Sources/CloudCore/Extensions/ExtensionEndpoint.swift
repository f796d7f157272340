import Logging

/// What a layer above the engine adds to the server: read-only extension endpoints, rules for writes, the
/// import and edits of public data the operator console offers, and background jobs.
public struct ServerExtensions: Sendable {
    public var endpoints: [ExtensionEndpoint]
    public var writeRules: (any WriteRules)?
    public var publicData: (any PublicDataEditor)?
    /// Work that runs beside the server for as long as it serves (the score feeds), cancelled when it stops.
    public var backgroundJobs: [@Sendable () async throws -> Void]

    public init(
        endpoints: [ExtensionEndpoint] = [], writeRules: (any WriteRules)? = nil, publicData: (any PublicDataEditor)? = nil,
        backgroundJobs: [@Sendable () async throws -> Void] = []
    ) {
        self.endpoints = endpoints
        self.writeRules = writeRules
        self.publicData = publicData
        self.backgroundJobs = backgroundJobs
    }
}

/// The refusals of a batch, by record name, given every record it would write: the records it saves, as they would
/// be stored, and the tombstones of those it deletes (a check may need the whole batch: a badge saved with the
/// visits that earn it).
public typealias BatchCheck = @Sendable (_ writes: [Record]) -> [String: CloudError]

/// Checks a layer above the engine makes on records a write would save (the sports layer checks visits against the
/// canonical data), and what it does after one: a refused record fails alone with its error, as any per-record
/// failure does.
public protocol WriteRules: Sendable {
    /// The record types the rules look at; a batch with none of them (and no untyped update) is not checked.
    var recordTypes: Set<String> { get }
    /// The check for `operations` saved into `zone` of `database` of `container`/`environment`, prepared before the
    /// write begins (it may read other databases, such as the public one); nil when nothing applies there.
    func check(
        _ operations: [RecordOperation], writesTo database: DatabaseRef, zone: String, container: String, environment: String, logger: Logger
    ) async throws -> BatchCheck?
    /// Called once a batch's changes are committed (`outcomes` in request order), to keep what depends on them right.
    func didWrite(_ outcomes: [OperationOutcome], to database: DatabaseRef, zone: String, container: String, environment: String, logger: Logger) async
}

/// An extension endpoint under `/database/1/{container}/{environment}/{database}/{path}` (POST): it gets the parsed
/// body and the resolved database and returns the JSON to answer. Authentication and errors are the same as for
/// the CloudKit endpoints; it may only read. Layers above the engine (the sports layer) offer these; the HTTP
/// layer mounts them without knowing what they do.
public struct ExtensionEndpoint: Sendable {
    public var path: String
    public var handler: @Sendable (_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue

    public init(path: String, handler: @escaping @Sendable (_ body: JSONValue, _ database: DatabaseRef, _ logger: Logger) async throws -> JSONValue) {
        self.path = path
        self.handler = handler
    }
}
