import Foundation

/// What repeats on the calendar, in a time zone: a ``CronExpression`` or a ``CalendarRule``, with
/// optional start and end bounds and jitter.
///
/// ```swift
/// let berlin = TimeZone(identifier: "Europe/Berlin")!
/// let workHours = try CalendarSchedule(cron: "*/15 9-17 * * mon-fri", in: berlin)
/// let standUp = CalendarSchedule(try CalendarRule("mon..fri 09:30", in: berlin))
/// print(workHours)   // CRON_TZ=Europe/Berlin */15 9-17 * * 1-5
/// let next = workHours.nextOccurrence(after: Date())
/// ```
///
/// Occurrences are found field by field, never by scanning minute by minute: the next
/// occurrence of a rule that comes once in four years (`0 0 29 2 *`) costs a few microseconds.
///
/// ## Daylight saving
///
/// A schedule reads its fields on the zone's wall clock. On the days the clocks change:
/// - A time that does not exist (02:30 when the clocks jump from 02:00 to 03:00) occurs once,
///   shifted by the gap (03:30). An occurrence that the shift lands on an existing occurrence is
///   the same occurrence: `*/30 * * * *` runs at 01:30 and 03:00 — thirty minutes apart.
/// - A time that happens twice (01:30 when the clocks go back from 02:00 to 01:00) occurs once,
///   at its first instance — unless the schedule matches every hour of the day (`0 * * * *`,
///   `*/30 * * * *`, `* * * * *`): such a schedule follows elapsed time, and occurs at both
///   instances, so that an hourly schedule never leaves two hours between runs. An hour step
///   (`0 */2 * * *`) does not match every hour: it names hours of the day, the list `0,2,…,22`,
///   and occurs once, as any fixed hour does.
///
/// The DocC article "Calendar schedules" has the table, zone by zone.
///
/// ## Bounds and jitter
///
/// ``bounded(from:until:)`` keeps the occurrences at or after a start and before an end.
/// ``jittered(upTo:seed:)`` delays each occurrence by up to a maximum, by an amount drawn from the
/// occurrence and a seed: the same on every machine and every run, so that a fleet agrees on it,
/// and different for different seeds, so that many timers on one schedule spread out.
///
/// A schedule is data — its zone kept by identifier — and its `description` reads back as an
/// equal schedule (``init(parsing:in:)``), so durable timers store it as text.
public struct CalendarSchedule: Sendable, Hashable, CustomStringConvertible {
    /// Which times match, on the zone's wall clock.
    public let expression: CronExpression
    /// The time zone's identifier, such as `"America/New_York"`.
    public let timeZoneIdentifier: String
    /// The first second an occurrence may fall on (inclusive), in seconds since 1970.
    let startSecond: Int64?
    /// The second occurrences end before (exclusive), in seconds since 1970.
    let endSecond: Int64?
    /// The largest delay added to an occurrence, in milliseconds; 0 for none.
    let jitterMilliseconds: Int64
    /// The seed of the delays.
    public let jitterSeed: UInt64

    /// A schedule of `expression` on the wall clock of `timeZone`.
    public init(_ expression: CronExpression, in timeZone: TimeZone) {
        self.init(expression: expression, zone: timeZone.identifier, start: nil, end: nil, jitter: 0, seed: 0)
    }

    /// A schedule of a cron expression, read from text, on the wall clock of `timeZone` — or of
    /// the zone a `CRON_TZ=` (or `TZ=`) prefix names: `CRON_TZ=Asia/Tokyo 0 9 * * *`.
    ///
    /// - Throws: ``TimerError/invalidCalendarRule(_:)``, naming the field and the reason, or the
    ///   unknown zone.
    public init(cron text: String, in timeZone: TimeZone = .current) throws(TimerError) {
        try self.init(cron: text, in: timeZone, knownZoneRequired: true)
    }

    init(cron text: String, in timeZone: TimeZone, knownZoneRequired: Bool) throws(TimerError) {
        var body = text.trimmingWhitespace()
        var zone = timeZone.identifier
        if let prefix = ["CRON_TZ=", "TZ="].first(where: { body.uppercased().hasPrefix($0) }) {
            let rest = body.dropFirst(prefix.count)
            let name = rest.prefix(while: { !$0.isWhitespace })
            guard !knownZoneRequired || TimeZone(identifier: String(name)) != nil else {
                throw .invalidCalendarRule("unknown time zone '\(name)' in '\(text)'")
            }
            zone = String(name)
            body = String(rest.dropFirst(name.count))
        }
        self.init(expression: try CronExpression(body), zone: zone, start: nil, end: nil, jitter: 0, seed: 0)
    }

    /// The schedule of a calendar rule: its time of day, on its weekdays, in its zone.
    public init(_ rule: CalendarRule) {
        let weekdays = rule.weekdays.map { days in days.reduce(UInt8(0)) { $0 | 1 << ($1 - 1) } } ?? CronExpression.allDaysOfWeek
        let expression = CronExpression(
            seconds: 1 << rule.second, minutes: 1 << rule.minute, hours: 1 << rule.hour, daysOfMonth: CronExpression.allDaysOfMonth,
            nearestWeekdays: 0, lastDayOfMonth: false, lastWeekdayOfMonth: false, months: CronExpression.allMonths, daysOfWeek: weekdays,
            lastWeekdays: 0, nthWeekdays: 0)
        self.init(expression: expression, zone: rule.timeZoneIdentifier, start: nil, end: nil, jitter: 0, seed: 0)
    }

    init(expression: CronExpression, zone: String, start: Int64?, end: Int64?, jitter: Int64, seed: UInt64) {
        self.expression = expression
        self.timeZoneIdentifier = zone
        self.startSecond = start
        self.endSecond = end
        self.jitterMilliseconds = jitter
        self.jitterSeed = seed
    }

    /// The schedule's zone, or `nil` if this system does not know its identifier (a schedule
    /// stored by a system with a newer time-zone database).
    public var timeZone: TimeZone? { TimeZone(identifier: timeZoneIdentifier) }

    /// The first instant an occurrence may fall on, if the schedule has a start.
    public var start: Date? { startSecond.map { Date(timeIntervalSince1970: Double($0)) } }

    /// The instant occurrences end before, if the schedule has an end.
    public var end: Date? { endSecond.map { Date(timeIntervalSince1970: Double($0)) } }

    /// The largest delay added to an occurrence; zero for none.
    public var jitter: Duration { .milliseconds(jitterMilliseconds) }

    /// The schedule with occurrences only at or after `start` and before `end`; a bound not given
    /// stays as it was. Bounds are kept to the second (occurrences fall on whole seconds) and
    /// apply to occurrences before their jitter.
    ///
    /// - Throws: ``TimerError/invalidCalendarRule(_:)`` if `end` is not after `start`, or a bound
    ///   lies outside the years 1–9999.
    public func bounded(from start: Date? = nil, until end: Date? = nil) throws(TimerError) -> CalendarSchedule {
        func second(_ date: Date) throws(TimerError) -> Int64 {
            // 0001-01-01 to 9999-12-31: what the text form writes.
            guard (-62_135_596_800.0...253_402_300_799.0).contains(date.timeIntervalSince1970) else {
                throw .invalidCalendarRule("a schedule's bounds must lie in the years 1 to 9999, got \(date)")
            }
            return Int64(date.timeIntervalSince1970.rounded(.up))
        }
        let startSecond = try start.map { (date) throws(TimerError) in try second(date) } ?? self.startSecond
        let endSecond = try end.map { (date) throws(TimerError) in try second(date) } ?? self.endSecond
        if let startSecond, let endSecond, endSecond <= startSecond {
            throw .invalidCalendarRule("a schedule's end must come after its start")
        }
        return CalendarSchedule(
            expression: expression, zone: timeZoneIdentifier, start: startSecond, end: endSecond, jitter: jitterMilliseconds, seed: jitterSeed)
    }

    /// The schedule with each occurrence delayed by up to `maximum` (to the millisecond), by an
    /// amount drawn from the occurrence and `seed`. Keep it shorter than the gap between
    /// occurrences: a longer one can reorder them.
    ///
    /// - Throws: ``TimerError/invalidCalendarRule(_:)`` for a negative jitter or one over a day.
    public func jittered(upTo maximum: Duration, seed: UInt64 = 0) throws(TimerError) -> CalendarSchedule {
        let milliseconds = maximum.saturatingNanoseconds / 1_000_000
        guard maximum >= .zero, milliseconds <= 86_400_000 else {
            throw .invalidCalendarRule("a schedule's jitter must be between zero and a day, got \(maximum)")
        }
        return CalendarSchedule(expression: expression, zone: timeZoneIdentifier, start: startSecond, end: endSecond, jitter: milliseconds, seed: seed)
    }
}
