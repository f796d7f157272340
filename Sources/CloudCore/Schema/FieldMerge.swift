/// The one merge of canonical data into a stored record, used by the server's canonical import and by the
/// client SDK when a canonical delta arrives: system fields take the source's values, immutable fields keep
/// the first value they had, user fields are never touched.
public struct FieldMerge: Sendable, Equatable {
    /// The merged fields.
    public var fields: [String: FieldValue]
    /// System fields whose value the merge changed (added, updated or removed), sorted.
    public var changed: [String]
    /// Immutable fields the source tried to change; their stored value was kept. Sorted.
    public var refused: [String]

    /// True when the merge leaves the record as it was.
    public var isUnchanged: Bool { self.changed.isEmpty }

    /// - Parameters:
    ///   - stored: the record's current fields (`nil` for a new record).
    ///   - incoming: the canonical source's fields for it.
    ///   - owners: who owns each field; a field not listed is treated as a system field.
    public init(stored: [String: FieldValue]?, incoming: [String: FieldValue], owners: [String: FieldOwner]) {
        var fields = stored ?? [:]
        var changed: [String] = []
        var refused: [String] = []
        for name in Set(incoming.keys).union(stored?.keys ?? [:].keys) {
            let new = incoming[name]
            let old = stored?[name]
            switch owners[name] ?? .system {
            case .user:
                continue
            case .immutable:
                if let old {
                    if let new, new != old { refused.append(name) }
                } else if let new {
                    fields[name] = new
                    changed.append(name)
                }
            case .system:
                if new != old {
                    fields[name] = new
                    changed.append(name)
                }
            }
        }
        self.fields = fields
        self.changed = changed.sorted()
        self.refused = refused.sorted()
    }
}
