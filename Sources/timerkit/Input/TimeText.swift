import Foundation

/// A time of day or a date-time, as `at` and `countdown` take it: `09:30` (today, or tomorrow if it
/// has passed), `09:30:15`, or ISO 8601 (`2026-11-23T20:00`, `2026-11-23T20:00+01:00`,
/// `2026-11-23T19:00:00Z`, seconds optional; a date-time without an offset is local time), at most
/// 100 years ahead. Resolved against a calendar and an instant, so that tests can fix both.
struct TimeText: Equatable {
    /// The wall-clock instant the text names.
    let date: Date
    /// Set when a time of day had passed today and was moved to tomorrow: says so on stderr.
    let movedToTomorrow: Bool

    static let help = "a time such as 09:30, 09:30:15 or 2026-11-23T20:00 (ISO 8601; local time unless an offset is given)"

    /// Whether `text` looks like a time rather than a duration (it has a colon or a date's dashes).
    static func looksLikeTime(_ text: String) -> Bool {
        text.contains(":") || (text.count >= 10 && text.dropFirst(4).first == "-")
    }

    static func resolve(_ text: String, now: Date, calendar: Calendar = .current) throws(UsageError) -> TimeText {
        let trimmed = String(text.trimmingWhitespace)
        if let parts = timeOfDay(trimmed) {
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

    private static func nextTimeOfDay(_ parts: [Int], text: String, now: Date, calendar: Calendar) throws(UsageError) -> TimeText {
        let (hour, minute, second) = (parts[0], parts[1], parts.count == 3 ? parts[2] : 0)
        guard hour < 24, minute < 60, second < 60 else {
            throw UsageError("impossible time '\(text)': hours run 00–23, minutes and seconds 00–59")
        }
        func on(_ day: Date) -> Date? {
            // In a daylight-saving gap the time does not exist that day: the next one that does.
            calendar.date(bySettingHour: hour, minute: minute, second: second, of: day, matchingPolicy: .nextTime, direction: .forward)
        }
        if let today = on(now), today > now { return TimeText(date: today, movedToTomorrow: false) }
        guard let tomorrowStart = calendar.date(byAdding: .day, value: 1, to: calendar.startOfDay(for: now)),
            let tomorrow = on(tomorrowStart)
        else { throw UsageError("cannot place '\(text)' on the calendar") }
        return TimeText(date: tomorrow, movedToTomorrow: true)
    }

    private static func isoDate(_ text: String, calendar: Calendar) -> Date? {
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

    /// `2026-11-23 09:30:00 +0100`: for messages.
    static func describe(_ date: Date, calendar: Calendar = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = calendar
        formatter.timeZone = calendar.timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS Z"
        return formatter.string(from: date)
    }
}
