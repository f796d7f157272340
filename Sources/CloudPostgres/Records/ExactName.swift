/// A name as PostgreSQL compares `text` keys: byte for byte. `String`'s equality takes canonically equivalent names
/// (é precomposed and decomposed) for one, where the database holds two zones or records; keys of what was read from
/// it must not merge them.
struct ExactName: Hashable, Sendable {
    var text: String

    init(_ text: String) { self.text = text }

    static func == (a: ExactName, b: ExactName) -> Bool { a.text.utf8.elementsEqual(b.text.utf8) }

    func hash(into hasher: inout Hasher) {
        var text = self.text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
