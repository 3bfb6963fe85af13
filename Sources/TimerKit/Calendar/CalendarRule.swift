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
/// A rule is data (its zone by identifier): a durable timer stores it and follows it across
/// restarts, and `timerkit every --on "mon..fri 09:00"` runs a command on it. A rule also reads from
/// text, systemd's `OnCalendar` style (``init(_:in:)``).
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
    /// - Throws: ``TimerError/invalidCalendarRule(_:)`` for a field out of range.
    public static func daily(at hour: Int, _ minute: Int = 0, _ second: Int = 0, in timeZone: TimeZone) throws(TimerError) -> CalendarRule {
        try CalendarRule(hour: hour, minute: minute, second: second, weekdays: nil, timeZone: timeZone)
    }

    /// On each of `weekdays` (1 is Sunday … 7 is Saturday) at `hour:minute:second` in `timeZone`.
    ///
    /// - Throws: ``TimerError/invalidCalendarRule(_:)`` for a field out of range or no weekday.
    public static func weekly(on weekdays: Set<Int>, at hour: Int, _ minute: Int = 0, _ second: Int = 0, in timeZone: TimeZone) throws(TimerError)
        -> CalendarRule
    {
        try CalendarRule(hour: hour, minute: minute, second: second, weekdays: weekdays, timeZone: timeZone)
    }

    private init(hour: Int, minute: Int, second: Int, weekdays: Set<Int>?, timeZone: TimeZone) throws(TimerError) {
        try self.init(hour: hour, minute: minute, second: second, weekdays: weekdays, timeZoneIdentifier: timeZone.identifier)
    }

    private init(hour: Int, minute: Int, second: Int, weekdays: Set<Int>?, timeZoneIdentifier: String) throws(TimerError) {
        guard (0..<24).contains(hour) else { throw .invalidCalendarRule("hour \(hour) is not in 0–23") }
        guard (0..<60).contains(minute) else { throw .invalidCalendarRule("minute \(minute) is not in 0–59") }
        guard (0..<60).contains(second) else { throw .invalidCalendarRule("second \(second) is not in 0–59") }
        if let weekdays {
            guard !weekdays.isEmpty else { throw .invalidCalendarRule("a weekly rule needs at least one weekday") }
            guard weekdays.allSatisfy({ (1...7).contains($0) }) else { throw .invalidCalendarRule("weekdays are 1 (Sunday) to 7 (Saturday)") }
        }
        self.hour = hour
        self.minute = minute
        self.second = second
        self.weekdays = weekdays
        self.timeZoneIdentifier = timeZoneIdentifier
    }

    /// The rule's zone, or `nil` if this system does not know its identifier (a rule stored by a
    /// system with a newer time-zone database).
    public var timeZone: TimeZone? { TimeZone(identifier: timeZoneIdentifier) }

    /// The first occurrence strictly after `date`, or `nil` if the rule's zone is unknown here.
    /// The rule's occurrences are those of its ``CalendarSchedule``.
    public func nextOccurrence(after date: Date) -> Date? {
        CalendarSchedule(self).nextOccurrence(after: date)
    }

    /// The rule as ``init(_:in:)`` reads it, with its zone: `Mon..Fri 09:00:00 Europe/Berlin`,
    /// `daily 02:30:00 America/New_York`.
    public var description: String {
        "\(CalendarRuleText.days(weekdays)) \(CalendarRuleText.twoDigits(hour)):\(CalendarRuleText.twoDigits(minute)):\(CalendarRuleText.twoDigits(second)) \(timeZoneIdentifier)"
    }
}

extension CalendarRule {
    private enum CodingKeys: String, CodingKey {
        case hour, minute, second, weekdays, timeZoneIdentifier
    }

    /// Decodes a rule, checking its fields as the factories do: a stored rule out of range is a
    /// decoding error, never a trap later.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let zone = try container.decode(String.self, forKey: .timeZoneIdentifier)
        do {
            self = try CalendarRule(
                hour: try container.decode(Int.self, forKey: .hour), minute: try container.decode(Int.self, forKey: .minute),
                second: try container.decode(Int.self, forKey: .second), weekdays: try container.decodeIfPresent(Set<Int>.self, forKey: .weekdays),
                timeZoneIdentifier: zone)
        } catch let error as TimerError {
            throw DecodingError.dataCorruptedError(forKey: .hour, in: container, debugDescription: error.description)
        }
    }

    /// Reads a rule from text, as systemd's `OnCalendar` writes days and times: days, then a time.
    ///
    /// - The time: `HH:MM` or `HH:MM:SS`, 24-hour.
    /// - The days (optional; every day without them): `daily`, `weekdays` (Monday to Friday),
    ///   `weekends`, or weekday names (`mon`, `tue` … or in full, any case) and ranges of them,
    ///   separated by commas: `mon..fri`, `mon,wed,fri`, `sat..sun`, `fri..mon` (a range may wrap
    ///   past Sunday).
    ///
    /// ```swift
    /// let standUp = try CalendarRule("mon..fri 09:30", in: .current)
    /// ```
    ///
    /// - Throws: ``TimerError/invalidCalendarRule(_:)``, naming what could not be read.
    public init(_ text: String, in timeZone: TimeZone) throws(TimerError) {
        let (weekdays, hour, minute, second) = try CalendarRuleText.parse(text)
        self = try CalendarRule(hour: hour, minute: minute, second: second, weekdays: weekdays, timeZone: timeZone)
    }
}

/// The text form of a ``CalendarRule``: reading it and writing its days.
enum CalendarRuleText {
    /// Day names as `Calendar` numbers them: 1 is Sunday … 7 is Saturday.
    static let names = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
    static let fullNames = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// `daily`, `weekdays`, `weekends`, or the days as ranges (`Mon..Fri`, `Mon,Wed,Fri`).
    static func days(_ weekdays: Set<Int>?) -> String {
        guard let weekdays, weekdays.count < 7 else { return "daily" }
        // Runs of consecutive days, from Monday (so that Mon..Fri reads as people write it).
        let order = [2, 3, 4, 5, 6, 7, 1]
        var parts: [String] = []
        var index = 0
        while index < order.count {
            guard weekdays.contains(order[index]) else {
                index += 1
                continue
            }
            var end = index
            while end + 1 < order.count, weekdays.contains(order[end + 1]) { end += 1 }
            let first = names[order[index] - 1].capitalized
            let last = names[order[end] - 1].capitalized
            parts.append(end == index ? first : end == index + 1 ? "\(first),\(last)" : "\(first)..\(last)")
            index = end + 1
        }
        return parts.joined(separator: ",")
    }

    /// The weekdays (nil: every day) and the time of `text`.
    static func parse(_ text: String) throws(TimerError) -> (Set<Int>?, Int, Int, Int) {
        let words = text.lowercased().split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let timeWord = words.last, words.count <= 2 else {
            throw .invalidCalendarRule("'\(text)' is not days and a time, as in 'mon..fri 09:00' or '18:30'")
        }
        let fields = timeWord.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(fields.count),
            fields.allSatisfy({ (1...2).contains($0.count) && $0.allSatisfy { $0.isASCII && $0.isNumber } })
        else { throw .invalidCalendarRule("'\(timeWord)' is not a time of day: expected HH:MM or HH:MM:SS, as in 09:00") }
        let numbers = fields.map { Int($0) ?? -1 }
        let weekdays = try words.count == 2 ? days(String(words[0]), in: text) : nil
        return (weekdays, numbers[0], numbers[1], numbers.count == 3 ? numbers[2] : 0)
    }

    private static func day(_ word: Substring, in text: String) throws(TimerError) -> Int {
        if let index = names.firstIndex(of: String(word)) ?? fullNames.firstIndex(of: String(word)) { return index + 1 }
        throw .invalidCalendarRule(
            "unknown day '\(word)' in '\(text)': use mon, tue, wed, thu, fri, sat, sun, ranges such as mon..fri, daily, weekdays or weekends")
    }

    private static func days(_ word: String, in text: String) throws(TimerError) -> Set<Int>? {
        switch word {
        case "daily", "*": return nil
        case "weekdays": return [2, 3, 4, 5, 6]
        case "weekends": return [1, 7]
        default: break
        }
        var result = Set<Int>()
        for part in word.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = part.components(separatedBy: "..")
            guard ends.count <= 2, !part.isEmpty else {
                throw .invalidCalendarRule("'\(part)' in '\(text)' is not a day or a range of days such as mon..fri")
            }
            let first = try day(Substring(ends[0]), in: text)
            let last = try ends.count == 2 ? day(Substring(ends[1]), in: text) : first
            // A range may wrap past Saturday: fri..mon is Fri, Sat, Sun, Mon.
            var current = first
            while true {
                result.insert(current)
                if current == last { break }
                current = current % 7 + 1
            }
        }
        return result.count == 7 ? nil : result
    }
}
