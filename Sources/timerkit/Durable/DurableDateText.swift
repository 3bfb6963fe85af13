import Foundation

/// A date for `--due-before` and `--due-after`, past or future: ISO 8601 (`2026-11-23T20:00`,
/// local time unless it has an offset, or `…Z`), a day (`2026-11-23`, its local midnight;
/// `yesterday`, `today`, `tomorrow` the same), `now`,
/// `+1h` (from now), `1h ago` (or `-1h`, given as `--due-before=-1h`), or what `at` takes
/// (`tomorrow 9am`, `09:30`).
enum DurableDateText {
    static let help = "a date: 2026-11-23T20:00 (ISO 8601, local unless it has an offset), 2026-11-23, today, now, +1h or 1h ago"

    static func date(_ text: String, now: Date = Date(), calendar: Calendar = .current) throws(UsageError) -> Date {
        let trimmed = String(text.trimmingWhitespace)
        let lowered = trimmed.lowercased()
        if lowered == "now" { return now }
        for (word, days) in [("yesterday", -1), ("today", 0), ("tomorrow", 1)] where lowered == word {
            return calendar.date(byAdding: .day, value: days, to: calendar.startOfDay(for: now)) ?? now
        }
        if lowered.hasPrefix("+") {
            return now.addingTimeInterval(Double(try DurationText.nanoseconds(String(lowered.dropFirst()))) / 1e9)
        }
        if lowered.hasPrefix("-") {
            // `--due-before=-5m`: with `=`, as ArgumentParser reads a value that starts with a dash.
            return now.addingTimeInterval(-Double(try DurationText.nanoseconds(String(lowered.dropFirst()))) / 1e9)
        }
        if lowered.hasSuffix(" ago") {
            return now.addingTimeInterval(-Double(try DurationText.nanoseconds(String(lowered.dropLast(4)))) / 1e9)
        }
        if let date = TimeText.isoDate(trimmed, calendar: calendar) { return date }
        if let day = day(trimmed, calendar: calendar) { return day }
        if let time = try? TimeText.resolve(trimmed, now: now, calendar: calendar) { return time.date }
        throw UsageError("invalid date '\(text)': expected \(help)")
    }

    /// `yyyy-MM-dd`: that day's first instant, local time.
    private static func day(_ text: String, calendar: Calendar) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = calendar
        formatter.timeZone = calendar.timeZone
        formatter.isLenient = false
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.date(from: text).map { calendar.startOfDay(for: $0) }
    }
}
