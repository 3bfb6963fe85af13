import Foundation

/// A time of day or a date-time, as `at` and `countdown` take it: `09:30` (today, or tomorrow if it
/// has passed), `09:30:15`, `9am`, `9:30pm`, `today 18:00` or `tomorrow 9am` (that day; no moving),
/// `+5m` or `+1h 30m` (a duration from now, on the wall clock), or ISO 8601 (`2026-11-23T20:00`,
/// `2026-11-23T20:00+01:00`, `2026-11-23T19:00:00Z`, seconds optional; a date-time without an
/// offset is local time), at most 100 years ahead. Resolved against a calendar and an instant, so
/// that tests can fix both.
struct TimeText: Equatable {
    /// The wall-clock instant the text names.
    let date: Date
    /// Set when a time of day had passed today and was moved to tomorrow: says so on stderr.
    let movedToTomorrow: Bool

    static let help = "a time such as 09:30, 9am, 9:30pm, tomorrow 09:00, +5m or 2026-11-23T20:00 (ISO 8601; local time unless an offset is given)"

    /// Whether `text` looks like a time rather than a duration: a colon, a date's dashes, `am` or
    /// `pm` after a digit, `today`/`tomorrow`, or a leading `+`.
    static func looksLikeTime(_ text: String) -> Bool {
        let lowered = text.trimmingWhitespace.lowercased()
        return lowered.contains(":") || (lowered.count >= 10 && lowered.dropFirst(4).first == "-")
            || twelveHour(lowered) != nil || lowered.hasPrefix("+")
            || lowered.hasPrefix("today") || lowered.hasPrefix("tomorrow")
    }

    static func resolve(_ text: String, now: Date, calendar: Calendar = .current) throws(UsageError) -> TimeText {
        let trimmed = String(text.trimmingWhitespace)
        let lowered = trimmed.lowercased()
        // +DURATION: from now.
        if lowered.hasPrefix("+") {
            let delay = try DurationText.nanoseconds(String(lowered.dropFirst()))
            guard delay > 0 else { throw UsageError("'\(trimmed)' is now, not a time ahead: give a duration above zero after +") }
            return TimeText(date: now.addingTimeInterval(Double(delay) / 1e9), movedToTomorrow: false)
        }
        // today TIME, tomorrow TIME: that day, never moved.
        for (word, days) in [("today", 0), ("tomorrow", 1)] where lowered == word || lowered.hasPrefix(word + " ") {
            let rest = String(lowered.dropFirst(word.count)).trimmingWhitespace
            guard let parts = timeOfDay(String(rest)) ?? twelveHour(String(rest)) else {
                throw UsageError("invalid time '\(trimmed)': expected a time of day after '\(word)', as in \(word) 09:00 or \(word) 9am")
            }
            let time = try timeOfDay(parts, text: trimmed, daysAhead: days, now: now, calendar: calendar)
            guard time > now else {
                throw UsageError("'\(trimmed)' is in the past (now: \(Self.describe(now, calendar: calendar)))")
            }
            return TimeText(date: time, movedToTomorrow: false)
        }
        if let parts = timeOfDay(trimmed) ?? twelveHour(lowered) {
            return try nextTimeOfDay(parts, text: trimmed, now: now, calendar: calendar)
        }
        if let date = isoDate(trimmed, calendar: calendar) {
            guard date > now else {
                throw UsageError("'\(trimmed)' is in the past (now: \(Self.describe(now, calendar: calendar)))")
            }
            guard date.timeIntervalSince(now) <= Double(DurationText.maximumNanoseconds) / 1e9 else {
                throw UsageError("'\(trimmed)' is too far ahead (at most 100 years from now)")
            }
            return TimeText(date: date, movedToTomorrow: false)
        }
        throw UsageError("invalid time '\(text)': expected \(help)")
    }

    /// `HH:MM` or `HH:MM:SS`, each field one or two ASCII digits; nil if the text has another shape.
    /// Fields out of range are returned as they are and refused by the caller.
    private static func timeOfDay(_ text: String) -> [Int]? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2 || fields.count == 3 else { return nil }
        var values: [Int] = []
        for field in fields {
            guard (1...2).contains(field.count), field.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(field) else { return nil }
            values.append(value)
        }
        return values
    }

    /// `9am`, `9:30pm`, `12:05:30am` (hours 1–12; 12am is midnight, 12pm noon) as 24-hour
    /// fields; nil if the text has another shape. Minutes and seconds out of range are returned as
    /// they are and refused by the caller.
    private static func twelveHour(_ text: String) -> [Int]? {
        let lowered = text.lowercased()
        guard let suffix = ["am", "pm"].first(where: { lowered.hasSuffix($0) }) else { return nil }
        let clock = String(String(lowered.dropLast(2)).trimmingWhitespace)
        let fields = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(fields.count) else { return nil }
        var values: [Int] = []
        for (index, field) in fields.enumerated() {
            let width = index == 0 ? 1...2 : 2...2
            guard width.contains(field.count), field.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(field) else { return nil }
            values.append(value)
        }
        guard (1...12).contains(values[0]) else { return nil }
        values[0] = values[0] % 12 + (suffix == "pm" ? 12 : 0)
        while values.count < 2 { values.append(0) }
        return values
    }

    /// The time of day `parts` on the day `daysAhead` after `now`'s (in a daylight-saving gap, the
    /// first time after it that exists).
    private static func timeOfDay(_ parts: [Int], text: String, daysAhead: Int, now: Date, calendar: Calendar) throws(UsageError) -> Date {
        let (hour, minute, second) = (parts[0], parts[1], parts.count == 3 ? parts[2] : 0)
        guard hour < 24, minute < 60, second < 60 else {
            throw UsageError("impossible time '\(text)': hours run 00–23, minutes and seconds 00–59")
        }
        guard let day = calendar.date(byAdding: .day, value: daysAhead, to: calendar.startOfDay(for: now)),
            let date = calendar.date(bySettingHour: hour, minute: minute, second: second, of: day, matchingPolicy: .nextTime, direction: .forward)
        else { throw UsageError("cannot place '\(text)' on the calendar") }
        return date
    }

    private static func nextTimeOfDay(_ parts: [Int], text: String, now: Date, calendar: Calendar) throws(UsageError) -> TimeText {
        let today = try timeOfDay(parts, text: text, daysAhead: 0, now: now, calendar: calendar)
        if today > now { return TimeText(date: today, movedToTomorrow: false) }
        return TimeText(date: try timeOfDay(parts, text: text, daysAhead: 1, now: now, calendar: calendar), movedToTomorrow: true)
    }

    static func isoDate(_ text: String, calendar: Calendar) -> Date? {
        // With an offset or Z: the standard form, with or without fractional seconds.
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        // With an offset or Z but without seconds (ISO 8601 allows it; ISO8601DateFormatter does not).
        for format in ["yyyy-MM-dd'T'HH:mmXXXXX", "yyyy-MM-dd'T'HH:mmXX"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.calendar = Calendar(identifier: .gregorian)
            formatter.isLenient = false
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        // Without an offset: local time.
        for format in ["yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd HH:mm"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.calendar = calendar
            formatter.timeZone = calendar.timeZone
            formatter.isLenient = false
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// `2026-11-23 09:30:00.000 +0100`: for messages.
    static func describe(_ date: Date, calendar: Calendar = .current) -> String {
        format(date, "yyyy-MM-dd HH:mm:ss.SSS Z", calendar: calendar)
    }

    /// `Thu 2026-11-26 09:00:00 +0100`: for lists of calendar occurrences.
    static func describeWithWeekday(_ date: Date, calendar: Calendar = .current) -> String {
        format(date, "EEE yyyy-MM-dd HH:mm:ss Z", calendar: calendar)
    }

    private static func format(_ date: Date, _ pattern: String, calendar: Calendar) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = calendar
        formatter.timeZone = calendar.timeZone
        formatter.dateFormat = pattern
        return formatter.string(from: date)
    }
}
