import Logging

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
