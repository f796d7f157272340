/// The app's rules for which game a photo shows. They decide, never guess: the server answers `canonical/match` with
/// them, so every app and the SDK do the same thing with the same photo (docs/CANONICAL.md, "Photo matching").
public enum PhotoMatchRules {
    /// When the photo was taken against the game's local day at the venue: the same day (or during the game, past
    /// midnight included), or the day before or after (tailgating, the next morning, time zones). Other days are not
    /// candidates at all.
    public enum Day: String, Sendable { case same, adjacent }

    /// What the app does with a photo: pick the game itself, ask the person to confirm one, let the person choose
    /// among several (a doubleheader, venues close together), or ask for the game by hand.
    public enum Verdict: String, Sendable { case autoSelect, confirm, choose, manual }

    /// One venue-and-game pair, by the venue's distance tier (high < 500 m, medium 500 m–2 km, low 2–5 km) and the day:
    /// high and the same day auto-select; high and an adjacent day, or medium, confirm; low is entered by hand.
    public static func verdict(distance: CanonicalDirectory.Confidence, day: Day) -> Verdict {
        switch (distance, day) {
        case (.high, .same): .autoSelect
        case (.high, .adjacent), (.medium, _): .confirm
        case (.low, _): .manual
        }
    }

    /// The whole answer: the pairs of the same day compete, or, when there are none, those of adjacent days. One pair
    /// keeps its own verdict; several (two games at one venue that day, or games at two venues within 2 km) are the
    /// person's choice; none (only far venues, or no game) is manual entry.
    public static func verdict(of pairs: [(verdict: Verdict, day: Day)]) -> Verdict {
        let proposed = pairs.filter { $0.verdict != .manual }
        let sameDay = proposed.filter { $0.day == .same }
        let competing = sameDay.isEmpty ? proposed : sameDay
        switch competing.count {
        case 0: return .manual
        case 1: return competing[0].verdict
        default: return .choose
        }
    }
}
