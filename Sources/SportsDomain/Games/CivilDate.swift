/// A calendar day without a time zone, with the proleptic Gregorian arithmetic games need (local days,
/// month strips, ranges) and none of Foundation's calendar cost.
public struct CivilDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var year, month, day: Int

    /// Nil when the day does not exist (`2025-02-30`).
    public init?(year: Int, month: Int, day: Int) {
        guard (1000...9999).contains(year), (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year) else { return nil }
        (self.year, self.month, self.day) = (year, month, day)
    }

    /// Parses `YYYY-MM-DD`.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2, let year = Int(parts[0]), let month = Int(parts[1]),
            let day = Int(parts[2])
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// The day `days` after 1970-01-01.
    public init(daysSince1970 days: Int) {
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        (self.year, self.month, self.day) = (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    public var daysSince1970: Int {
        // Howard Hinnant's days_from_civil.
        let y = self.month <= 2 ? self.year - 1 : self.year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (self.month > 2 ? self.month - 3 : self.month + 9) + 2) / 5 + self.day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    public func adding(days: Int) -> CivilDate { CivilDate(daysSince1970: self.daysSince1970 + days) }

    public var description: String {
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(self.year)-\(two(self.month))-\(two(self.day))"
    }

    public static func < (a: CivilDate, b: CivilDate) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    public static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
