import Foundation
import TimerKitDurable

/// How `timerkit durable` shows a stored timer: its status, its dates, its fields as lines and as
/// JSON.
enum DurableTimerText {
    /// Where the timer stands, decided as ``DurableTimerQuery`` decides it (the store decides in
    /// SQL at the time of a query; this reads the same fields at `now`). `DurableTimerInfo.state`
    /// is not used: it says `orphaned` for every timer whose handler this process has not
    /// registered, and the tool registers none.
    static func status(of timer: DurableTimerInfo, now: Date) -> DurableTimerQuery.Status {
        if timer.state == .failed { return .parked }
        if let lease = timer.leaseUntil, lease > now { return .running }
        if timer.readyAt <= now { return .due }
        return timer.attempts > 0 ? .retrying : .scheduled
    }

    /// `2026-11-23 20:00:00 +0100`: local time, to the second.
    static func local(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        return formatter.string(from: date)
    }

    /// `2026-11-23T19:00:00.000Z`: for JSON.
    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// How the timer repeats: `every 1h`, the calendar schedule, or `once`.
    static func recurrence(of timer: DurableTimerInfo) -> String {
        if let interval = timer.interval { return "every \(DurationText.describe(interval))" }
        if let schedule = timer.schedule { return "\(schedule)" }
        if let rule = timer.rule { return "\(rule)" }
        return "once"
    }

    /// Every field, one `name: value` line each, for `show`.
    static func lines(_ timer: DurableTimerInfo, now: Date) -> [(String, String)] {
        [
            ("key", timer.key),
            ("handler", timer.handler),
            ("status", status(of: timer, now: now).rawValue),
            ("next deadline", local(timer.nextDeadline)),
            ("ready at", local(timer.readyAt)),
            ("repeats", recurrence(of: timer)),
            ("misfire", "\(timer.misfire)"),
            ("fires completed", "\(timer.fireCount)"),
            ("attempts", "\(timer.attempts)"),
            ("owner", timer.owner ?? "-"),
            ("lease until", timer.leaseUntil.map(local) ?? "-"),
            ("last error", timer.lastError ?? "-")
        ]
    }

    /// Every field as a JSON object (dates in ISO 8601, UTC; durations in seconds; `null` for
    /// what is absent).
    static func json(_ timer: DurableTimerInfo, now: Date) -> [String: Any] {
        [
            "key": timer.key,
            "handler": timer.handler,
            "status": status(of: timer, now: now).rawValue,
            "nextDeadline": iso(timer.nextDeadline),
            "readyAt": iso(timer.readyAt),
            "intervalSeconds": timer.interval.map { seconds($0) as Any } ?? NSNull(),
            "schedule": timer.schedule.map { "\($0)" as Any } ?? timer.rule.map { "\($0)" as Any } ?? NSNull(),
            "misfire": "\(timer.misfire)",
            "fireCount": timer.fireCount,
            "attempts": timer.attempts,
            "owner": timer.owner ?? NSNull(),
            "leaseUntil": timer.leaseUntil.map { iso($0) as Any } ?? NSNull(),
            "lastError": timer.lastError ?? NSNull()
        ]
    }

    /// A duration in seconds, as a JSON number.
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// One line of JSON, keys sorted.
    static func jsonLine(_ object: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Text on one line: line breaks and tabs become spaces.
    static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
    }
}
