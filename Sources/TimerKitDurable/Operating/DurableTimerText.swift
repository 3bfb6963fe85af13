import Foundation
import TimerKit

/// How the operating reports write instants, durations and tables (the CLI writes the same).
package enum DurableTimerText {
    /// An instant in UTC to the millisecond: `2026-11-27T20:00:00.000Z`.
    package static func instant(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// An instant in `zone` with its offset: `2027-03-28 03:00:00 +02:00`, for schedules that
    /// live in a zone.
    package static func instant(_ date: Date, in zone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let offset = zone.secondsFromGMT(for: date)
        let sign = offset < 0 ? "-" : "+"
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(parts.year ?? 0)-\(two(parts.month))-\(two(parts.day)) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) "
            + "\(sign)\(two(abs(offset) / 3600)):\(two(abs(offset) % 3600 / 60))"
    }

    /// How far `date` lies from `now`, saturating at the ends of the 64-bit range of nanoseconds:
    /// a stored date may lie centuries away (0.1.0 stored `.distantPast` as -2^63 ns).
    package static func offset(of date: Date, from now: Date) -> Duration {
        .saturatingSeconds(date.timeIntervalSince(now))
    }

    /// A duration as a person reads it: `850ms`, `12.5s`, `3m 20s`, `2h 5m`, `3d 4h`; negative
    /// ones with a minus sign.
    package static func duration(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        let sign = nanoseconds < 0 ? "-" : ""
        let value = abs(nanoseconds)
        if value < 1e3 { return "\(sign)\(Int(value))ns" }
        if value < 1e6 { return sign + String(format: "%.0fµs", value / 1e3) }
        if value < 1e9 { return sign + String(format: "%.0fms", value / 1e6) }
        if value < 60e9 { return sign + String(format: "%.1fs", value / 1e9) }
        // Past 2^63 s (a duration of any stored dates is far less) the count of days saturates.
        let whole = Int64(min(value / 1e9, 9.2e18))
        if whole < 3600 { return "\(sign)\(whole / 60)m \(whole % 60)s" }
        if whole < 86_400 { return "\(sign)\(whole / 3600)h \(whole % 3600 / 60)m" }
        return "\(sign)\(whole / 86_400)d \(whole % 86_400 / 3600)h"
    }

    /// Rows under a header, each column as wide as its widest cell.
    package static func table(header: [String], rows: [[String]]) -> [String] {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            let line = row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
            return String(line.reversed().drop { $0 == " " }.reversed())
        }
    }
}
