import Foundation

/// A wall-clock time of day in a time zone, every day or on chosen weekdays: "daily at 09:00 in
/// Europe/Berlin".
///
/// Occurrences follow the zone's daylight-saving transitions:
/// - a time that does not exist on a spring-forward day (02:30 when clocks jump from 02:00 to
///   03:00) occurs once, shifted by the gap (03:30);
/// - a time that happens twice on a fall-back day (01:30 when clocks go from 02:00 back to 01:00)
///   occurs once, at its first instance.
///
/// A rule is stored as data (its zone by identifier), so a timer that follows it survives a restart.
public struct CalendarRule: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The hour of day, 0–23.
    public let hour: Int
    /// The minute, 0–59.
    public let minute: Int
    /// The second, 0–59.
    public let second: Int
    /// The weekdays the rule occurs on (1 is Sunday … 7 is Saturday, as `Calendar` numbers them), or
    /// `nil` for every day.
    public let weekdays: Set<Int>?
    /// The time zone's identifier, such as `"America/New_York"`.
    public let timeZoneIdentifier: String

    /// Every day at `hour:minute:second` in `timeZone`.
    ///
    /// - Throws: ``DurableTimerError/invalidRule(_:)`` for a field out of range.
    public static func daily(at hour: Int, _ minute: Int = 0, _ second: Int = 0, in timeZone: TimeZone) throws(DurableTimerError) -> CalendarRule {
        try CalendarRule(hour: hour, minute: minute, second: second, weekdays: nil, timeZone: timeZone)
    }

    /// On each of `weekdays` (1 is Sunday … 7 is Saturday) at `hour:minute:second` in `timeZone`.
    ///
    /// - Throws: ``DurableTimerError/invalidRule(_:)`` for a field out of range or no weekday.
    public static func weekly(on weekdays: Set<Int>, at hour: Int, _ minute: Int = 0, _ second: Int = 0, in timeZone: TimeZone) throws(DurableTimerError)
        -> CalendarRule
    {
        try CalendarRule(hour: hour, minute: minute, second: second, weekdays: weekdays, timeZone: timeZone)
    }

    private init(hour: Int, minute: Int, second: Int, weekdays: Set<Int>?, timeZone: TimeZone) throws(DurableTimerError) {
        guard (0..<24).contains(hour) else { throw .invalidRule("hour \(hour) is not in 0–23") }
        guard (0..<60).contains(minute) else { throw .invalidRule("minute \(minute) is not in 0–59") }
        guard (0..<60).contains(second) else { throw .invalidRule("second \(second) is not in 0–59") }
        if let weekdays {
            guard !weekdays.isEmpty else { throw .invalidRule("a weekly rule needs at least one weekday") }
            guard weekdays.allSatisfy({ (1...7).contains($0) }) else { throw .invalidRule("weekdays are 1 (Sunday) to 7 (Saturday)") }
        }
        self.hour = hour
        self.minute = minute
        self.second = second
        self.weekdays = weekdays
        self.timeZoneIdentifier = timeZone.identifier
    }

    /// The rule's zone, or `nil` if this system does not know its identifier (a rule stored by a
    /// system with a newer time-zone database).
    public var timeZone: TimeZone? { TimeZone(identifier: timeZoneIdentifier) }

    /// The first occurrence strictly after `date`, or `nil` if the rule's zone is unknown here.
    public func nextOccurrence(after date: Date) -> Date? {
        guard let zone = timeZone else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var candidate = date
        // At most eight days apart for a weekly rule; a few more steps for transition days.
        for _ in 0..<16 {
            guard
                let next = calendar.nextDate(
                    after: candidate, matching: DateComponents(hour: hour, minute: minute, second: second),
                    matchingPolicy: .nextTimePreservingSmallerComponents, repeatedTimePolicy: .first, direction: .forward)
            else { return nil }
            // A repeated local time occurs once: the second instance (same local time, an hour
            // later) is not an occurrence of its own.
            if isSecondInstance(next, calendar: calendar) {
                candidate = next
                continue
            }
            if let weekdays, !weekdays.contains(calendar.component(.weekday, from: next)) {
                candidate = next
                continue
            }
            return next
        }
        return nil
    }

    /// Whether `date` is the later of two instants with the same local time (a fall-back hour).
    private func isSecondInstance(_ date: Date, calendar: Calendar) -> Bool {
        let zone = calendar.timeZone
        let offsetNow = zone.secondsFromGMT(for: date)
        let offsetBefore = zone.secondsFromGMT(for: date.addingTimeInterval(-3 * 3600))
        guard offsetBefore > offsetNow else { return false }
        // The same wall time exists earlier, at the earlier (larger) offset.
        let earlier = date.addingTimeInterval(-Double(offsetBefore - offsetNow))
        return zone.secondsFromGMT(for: earlier) == offsetBefore
    }

    public var description: String {
        let time = String(format: "%02d:%02d:%02d", hour, minute, second)
        guard let weekdays else { return "daily at \(time) \(timeZoneIdentifier)" }
        return "on weekdays \(weekdays.sorted().map(String.init).joined(separator: ",")) at \(time) \(timeZoneIdentifier)"
    }
}
