/// A date and time of day on the proleptic Gregorian calendar with no zone: what a wall clock
/// shows. Arithmetic is on integers (days from 1970-01-01), so that a schedule's search never asks
/// `Calendar` for a date, and "local seconds" — the seconds since 1970-01-01T00:00 as the wall
/// clock counts them — order civil times and map them to instants with a zone's offset.
struct CivilTime: Hashable, Comparable, Sendable {
    var year: Int
    var month: Int
    var day: Int
    var hour: Int
    var minute: Int
    var second: Int

    /// The civil time `localSeconds` seconds after 1970-01-01T00:00:00.
    init(localSeconds: Int64) {
        let days = Int(localSeconds.floorDivided(by: 86_400))
        let secondOfDay = Int(localSeconds - Int64(days) * 86_400)
        (year, month, day) = CivilTime.date(fromDays: days)
        hour = secondOfDay / 3600
        minute = secondOfDay / 60 % 60
        second = secondOfDay % 60
    }

    init(year: Int, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
        (self.year, self.month, self.day, self.hour, self.minute, self.second) = (year, month, day, hour, minute, second)
    }

    /// Seconds since 1970-01-01T00:00:00 on the wall clock.
    var localSeconds: Int64 {
        Int64(CivilTime.days(year: year, month: month, day: day)) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    static func < (lhs: CivilTime, rhs: CivilTime) -> Bool { lhs.localSeconds < rhs.localSeconds }

    /// Days from 1970-01-01 to a date (Howard Hinnant's `days_from_civil`).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` days after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func date(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysIn(month: Int, of year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The weekday of a date: 0 is Sunday … 6 is Saturday, as cron numbers them.
    static func weekday(year: Int, month: Int, day: Int) -> Int {
        // 1970-01-01 was a Thursday (4).
        (days(year: year, month: month, day: day) % 7 + 11) % 7
    }
}

extension Int64 {
    /// Division rounding toward negative infinity (instants before 1970 have negative seconds).
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
