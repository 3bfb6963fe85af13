import Foundation
import TimerKitDurable

/// How `timerkit durable` writes a stored timer and a run: its status, instants in UTC (as the
/// library's reports — `why`, `plan`, `stats` — write them), its fields as lines and as JSON.
enum DurableFormat {
    /// Where the timer stands, decided as ``DurableTimerQuery`` decides it (the store decides in
    /// SQL at the time of a query; this reads the same fields at `now`): paused, parked, running,
    /// due, retrying, scheduled, the first that holds. `DurableTimerInfo.state` is not used as it
    /// is: it says `orphaned` for every timer whose handler this process has not registered, and
    /// the tool registers none.
    static func status(of timer: DurableTimerInfo, now: Date) -> DurableTimerQuery.Status {
        timer.status(at: now)
    }

    /// `2026-11-23T19:00:00.000Z`: UTC to the millisecond, in tables and JSON alike.
    static func instant(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// A duration to the millisecond for people: `850ms`, `12.5s`, `3m20s`, `-2s`.
    static func duration(_ duration: Duration) -> String {
        let milliseconds = Int64((seconds(duration) * 1000).rounded())
        if abs(milliseconds) < 1000 { return "\(milliseconds)ms" }
        if abs(milliseconds) < 60_000 { return String(format: "%.1fs", Double(milliseconds) / 1000) }
        return DurationText.describe(.milliseconds(milliseconds / 1000 * 1000))
    }

    /// How the timer repeats: `every 1h`, the calendar schedule, or `once`.
    static func recurrence(of timer: DurableTimerInfo) -> String {
        if let interval = timer.interval { return "every \(DurationText.describe(interval))" }
        if let schedule = timer.schedule { return "\(schedule)" }
        if let rule = timer.rule { return "\(rule)" }
        return "once"
    }

    /// A run in one line: `succeeded at 2026-…Z (120ms late, took 8ms, attempt 1, instance ID): error`.
    static func run(_ run: DurableTimerRun) -> String {
        "\(run.outcome.rawValue) at \(instant(run.started)) (\(duration(run.lateness)) late, took \(duration(run.duration)), attempt \(run.attempt), "
            + "instance \(run.instance))" + (run.error.map { ": \($0)" } ?? "")
    }

    /// Every field, one `name: value` line each, for `show`.
    static func lines(_ timer: DurableTimerInfo, now: Date) -> [(String, String)] {
        [
            ("key", timer.key),
            ("handler", timer.handler),
            ("status", status(of: timer, now: now).rawValue),
            ("next deadline", instant(timer.nextDeadline)),
            ("ready at", instant(timer.readyAt)),
            ("repeats", recurrence(of: timer)),
            ("misfire", "\(timer.misfire)"),
            ("fires completed", "\(timer.fireCount)"),
            ("attempts", "\(timer.attempts)"),
            ("owner", timer.owner ?? "-"),
            ("lease until", timer.leaseUntil.map(instant) ?? "-"),
            ("last error", timer.lastError ?? "-"),
            ("last run", timer.lastRun.map(run) ?? "none recorded")
        ]
    }

    /// Every field as a JSON object (instants in ISO 8601, UTC; durations in seconds; `null` for
    /// what is absent).
    static func json(_ timer: DurableTimerInfo, now: Date) -> [String: Any] {
        [
            "key": timer.key,
            "handler": timer.handler,
            "status": status(of: timer, now: now).rawValue,
            "nextDeadline": instant(timer.nextDeadline),
            "readyAt": instant(timer.readyAt),
            "intervalSeconds": timer.interval.map { seconds($0) as Any } ?? NSNull(),
            "schedule": timer.schedule.map { "\($0)" as Any } ?? timer.rule.map { "\($0)" as Any } ?? NSNull(),
            "misfire": "\(timer.misfire)",
            "fireCount": timer.fireCount,
            "attempts": timer.attempts,
            "owner": timer.owner ?? NSNull(),
            "leaseUntil": timer.leaseUntil.map { instant($0) as Any } ?? NSNull(),
            "lastError": timer.lastError ?? NSNull(),
            "lastRun": timer.lastRun.map { json($0) as Any } ?? NSNull()
        ]
    }

    /// A run as a JSON object.
    static func json(_ run: DurableTimerRun) -> [String: Any] {
        [
            "key": run.key,
            "handler": run.handler,
            "sequence": run.sequence,
            "attempt": run.attempt,
            "due": instant(run.due),
            "started": instant(run.started),
            "ended": instant(run.ended),
            "latenessSeconds": seconds(run.lateness),
            "durationSeconds": seconds(run.duration),
            "outcome": run.outcome.rawValue,
            "instance": run.instance,
            "error": run.error ?? NSNull()
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
