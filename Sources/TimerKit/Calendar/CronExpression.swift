/// A cron expression: which seconds, minutes, hours, days and months a schedule occurs on, as
/// crontab writes them — `*/15 9-17 * * mon-fri`.
///
/// The five standard fields — minute, hour, day of month, month, day of week — with an optional
/// sixth, leading field for seconds (`30 */5 * * * *` is 30 seconds past every fifth minute):
///
/// | field | values | names |
/// |---|---|---|
/// | second (optional, first) | 0–59 | |
/// | minute | 0–59 | |
/// | hour | 0–23 | |
/// | day of month | 1–31, `L`, `LW`, `15W` | |
/// | month | 1–12 | `jan`–`dec` |
/// | day of week | 0–7 (0 and 7 are Sunday), `5L`, `1#2` | `sun`–`sat` |
///
/// Each field is a list of items separated by commas; an item is `*`, a value, a range (`9-17`),
/// a step over everything (`*/15`), over a range (`9-17/2`) or from a value to the field's end
/// (`5/15`). `?` in a day field means `*`. Names and `L`/`W` are read in any case. The shorthands
/// `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly` stand for
/// `0 0 1 1 *`, `0 0 1 * *`, `0 0 * * 0`, `0 0 * * *` and `0 * * * *`.
///
/// The extensions of Quartz and most schedulers:
/// - `L` in the day of month is its last day; `LW` its last weekday (Monday to Friday); `15W` the
///   weekday nearest the 15th, within the month (a Saturday 15th gives Friday the 14th, a Sunday
///   gives Monday the 16th; a Saturday 1st gives Monday the 3rd, a Sunday 31st Friday the 29th).
/// - `5L` in the day of week is the month's last Friday; `1#2` its second Monday (`#1` to `#5`).
///
/// **Both day fields restricted**: when neither the day of month nor the day of week is `*` (or
/// `?`, or a list of every value), a day matches if *either* field matches — Vixie cron's rule:
/// `0 0 1,15 * 1` runs on the 1st, the 15th and every Monday. A field counts as restricted by
/// what it matches: `*/2` is restricted (as croniter reads it), and a field that matches every
/// day — `1-31`, `*/1`, `0-6` — is not, so `0 0 1-31 * 1` runs on Mondays only. Vixie cron looks
/// at the text instead (a field starting with `*` is unrestricted, `1-31` restricted), and so does
/// croniter (a full field counts as `*` only when the other day field's text holds a `*`).
///
/// An expression names no zone: a ``CalendarSchedule`` puts it in one, and decides what it means
/// on the days the clocks change.
///
/// ```swift
/// let workHours = try CronExpression("*/15 9-17 * * mon-fri")
/// print(workHours)   // */15 9-17 * * 1-5
/// ```
///
/// Text that does not read is refused with ``TimerError/invalidCalendarRule(_:)``, naming the
/// field and the reason; so is an expression that can never occur (`0 0 30 2 *`). An expression's
/// `description` is its canonical text, which reads back as an equal expression.
public struct CronExpression: Sendable, Hashable, CustomStringConvertible {
    /// Bit `n` set: second `n` matches.
    let seconds: UInt64
    /// Bit `n` set: minute `n` matches.
    let minutes: UInt64
    /// Bit `n` set: hour `n` matches.
    let hours: UInt32
    /// Bit `n` set: day `n` of the month matches (bits 1–31).
    let daysOfMonth: UInt32
    /// Bit `n` set: the weekday nearest day `n` matches (`nW`).
    let nearestWeekdays: UInt32
    /// `L`: the month's last day matches.
    let lastDayOfMonth: Bool
    /// `LW`: the month's last weekday matches.
    let lastWeekdayOfMonth: Bool
    /// Bit `n` set: month `n` matches (bits 1–12).
    let months: UInt16
    /// Bit `n` set: weekday `n` matches (0 is Sunday).
    let daysOfWeek: UInt8
    /// Bit `n` set: the month's last weekday `n` matches (`nL`).
    let lastWeekdays: UInt8
    /// Bit `5·n + k − 1` set: the `k`-th weekday `n` of the month matches (`n#k`).
    let nthWeekdays: UInt64

    /// Reads a cron expression: five fields, or six with seconds first, or a shorthand.
    ///
    /// - Throws: ``TimerError/invalidCalendarRule(_:)``, naming the field and what is wrong with
    ///   it, or saying that the expression never occurs.
    public init(_ text: String) throws(TimerError) {
        self = try CronParser(text: text).expression()
        guard canOccur else {
            throw .invalidCalendarRule("cron expression '\(text)' never occurs: no month has a day its day fields name")
        }
    }

    init(
        seconds: UInt64, minutes: UInt64, hours: UInt32, daysOfMonth: UInt32, nearestWeekdays: UInt32, lastDayOfMonth: Bool,
        lastWeekdayOfMonth: Bool, months: UInt16, daysOfWeek: UInt8, lastWeekdays: UInt8, nthWeekdays: UInt64
    ) {
        self.seconds = seconds
        self.minutes = minutes
        self.hours = hours
        self.daysOfMonth = daysOfMonth
        self.nearestWeekdays = nearestWeekdays
        self.lastDayOfMonth = lastDayOfMonth
        self.lastWeekdayOfMonth = lastWeekdayOfMonth
        self.months = months
        self.daysOfWeek = daysOfWeek
        self.lastWeekdays = lastWeekdays
        self.nthWeekdays = nthWeekdays
    }

    static let allSeconds: UInt64 = (1 << 60) - 1
    static let allHours: UInt32 = (1 << 24) - 1
    static let allDaysOfMonth: UInt32 = 0xFFFF_FFFE
    static let allMonths: UInt16 = 0x1FFE
    static let allDaysOfWeek: UInt8 = 0x7F

    /// Whether the day of month is restricted (not every day, or an extension).
    var restrictsDayOfMonth: Bool {
        daysOfMonth != Self.allDaysOfMonth || nearestWeekdays != 0 || lastDayOfMonth || lastWeekdayOfMonth
    }

    /// Whether the day of week is restricted (not every weekday, or an extension).
    var restrictsDayOfWeek: Bool { daysOfWeek != Self.allDaysOfWeek || lastWeekdays != 0 || nthWeekdays != 0 }

    /// Whether every hour of the day matches: the expression repeats within the day whatever the
    /// hour, so across a fall-back change it follows elapsed time (the repeated hour runs again).
    var matchesEveryHour: Bool { hours == Self.allHours }

    /// Whether some month of some year has a matching day (the 400-year Gregorian cycle holds
    /// every combination of leap year and weekday of the 1st).
    private var canOccur: Bool {
        var (year, month) = (2000, 1)
        for _ in 0..<(400 * 12) {
            if months & (1 << month) != 0, dayMask(year: year, month: month) != 0 { return true }
            month += 1
            if month == 13 { (year, month) = (year + 1, 1) }
        }
        return false
    }

    /// The matching days of a month: bit `d` set for day `d`.
    func dayMask(year: Int, month: Int) -> UInt32 {
        let length = CivilTime.daysIn(month: month, of: year)
        let valid = UInt32(truncatingIfNeeded: (UInt64(1) << (length + 1)) - 2)
        guard restrictsDayOfMonth || restrictsDayOfWeek else { return valid }
        let firstWeekday = CivilTime.weekday(year: year, month: month, day: 1)
        var byDay: UInt32 = 0
        if restrictsDayOfMonth {
            byDay = daysOfMonth & valid
            if lastDayOfMonth { byDay |= 1 << length }
            if lastWeekdayOfMonth { byDay |= 1 << Self.nearestWeekday(to: length, length: length, firstWeekday: firstWeekday) }
            var nearest = nearestWeekdays & valid
            while nearest != 0 {
                let day = nearest.trailingZeroBitCount
                nearest &= nearest - 1
                byDay |= 1 << Self.nearestWeekday(to: day, length: length, firstWeekday: firstWeekday)
            }
        }
        var byWeekday: UInt32 = 0
        if restrictsDayOfWeek {
            for weekday in 0..<7 {
                // The first day of the month on this weekday, then every seventh.
                let first = 1 + (weekday - firstWeekday + 7) % 7
                if daysOfWeek & (1 << weekday) != 0 {
                    var day = first
                    while day <= length {
                        byWeekday |= 1 << day
                        day += 7
                    }
                }
                if lastWeekdays & (1 << weekday) != 0 { byWeekday |= 1 << (first + (length - first) / 7 * 7) }
                for nth in 0..<5 where nthWeekdays & (1 << (weekday * 5 + nth)) != 0 {
                    let day = first + 7 * nth
                    if day <= length { byWeekday |= 1 << day }
                }
            }
        }
        // Vixie cron's rule: with both day fields restricted, either one matching is enough.
        switch (restrictsDayOfMonth, restrictsDayOfWeek) {
        case (true, true): return byDay | byWeekday
        case (true, false): return byDay
        default: return byWeekday
        }
    }

    /// The weekday (Monday to Friday) nearest day `day`, within its month (Quartz's `W`).
    static func nearestWeekday(to day: Int, length: Int, firstWeekday: Int) -> Int {
        switch (firstWeekday + day - 1) % 7 {
        case 6: day == 1 ? day + 2 : day - 1  // Saturday: Friday, or Monday the 3rd
        case 0: day == length ? day - 2 : day + 1  // Sunday: Monday, or Friday at the month's end
        default: day
        }
    }

    /// The first matching time of day at or after `hour:minute:second`, or `nil` if none is left
    /// in the day.
    func firstTime(atOrAfter hour: Int, _ minute: Int, _ second: Int) -> (hour: Int, minute: Int, second: Int)? {
        var (hour, minute, second) = (hour, minute, second)
        while let matchingHour = Self.first(in: UInt64(hours), atOrAfter: hour) {
            if matchingHour != hour { (minute, second) = (0, 0) }
            hour = matchingHour
            while let matchingMinute = Self.first(in: minutes, atOrAfter: minute) {
                if matchingMinute != minute { second = 0 }
                minute = matchingMinute
                if let matchingSecond = Self.first(in: seconds, atOrAfter: second) { return (hour, minute, matchingSecond) }
                (minute, second) = (minute + 1, 0)
            }
            (hour, minute, second) = (hour + 1, 0, 0)
        }
        return nil
    }

    /// The lowest set bit of `mask` at or above `value`.
    static func first(in mask: UInt64, atOrAfter value: Int) -> Int? {
        guard value < 64 else { return nil }
        let rest = mask & ~((UInt64(1) << value) &- 1)
        return rest == 0 ? nil : rest.trailingZeroBitCount
    }

    /// The first civil time strictly after `time` that the expression matches, or `nil` if none
    /// comes within 400 years.
    func nextMatch(after time: CivilTime) -> CivilTime? {
        var (year, month, day) = (time.year, time.month, time.day)
        var clock: (hour: Int, minute: Int, second: Int)? = (time.hour, time.minute, time.second + 1)
        if time.second == 59 { clock = time.minute == 59 ? (time.hour + 1, 0, 0) : (time.hour, time.minute + 1, 0) }
        for _ in 0..<(400 * 12 + 1) {
            if months & (1 << month) != 0 {
                var mask = dayMask(year: year, month: month) & ~((UInt32(1) << day) - 1)
                while mask != 0 {
                    let matchingDay = mask.trailingZeroBitCount
                    let from = matchingDay == day ? clock ?? (24, 0, 0) : (0, 0, 0)
                    if let found = firstTime(atOrAfter: from.0, from.1, from.2) {
                        return CivilTime(year: year, month: month, day: matchingDay, hour: found.hour, minute: found.minute, second: found.second)
                    }
                    mask &= mask - 1
                }
            }
            (day, clock) = (1, (0, 0, 0))
            month += 1
            if month == 13 { (year, month) = (year + 1, 1) }
        }
        return nil
    }
}
