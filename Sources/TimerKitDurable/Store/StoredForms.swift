import Foundation
import TimerKit

/// How recurrences and misfire policies are written in a store's columns: short, stable text, so
/// that a row written by one version of TimerKit reads in the next.
package enum StoredForms {
    package static func misfire(_ policy: MisfirePolicy) -> String {
        switch policy {
        case .once: "once"
        case .skip: "skip"
        case .all(let max): "all:\(max)"
        case .within(let window): "within:\(window.saturatingNanoseconds)"
        }
    }

    package static func misfire(from text: String) -> MisfirePolicy? {
        if text == "once" { return .once }
        if text == "skip" { return .skip }
        if text.hasPrefix("all:"), let max = Int(text.dropFirst(4)) { return .all(max: max) }
        if text.hasPrefix("within:"), let nanoseconds = Int64(text.dropFirst(7)) { return .within(.nanoseconds(nanoseconds)) }
        return nil
    }

    /// (interval nanoseconds, rule) columns of a recurrence: a calendar rule as JSON (an object,
    /// as 0.1.0 wrote it), a calendar schedule as its text (`CRON_TZ=Europe/Berlin 0 9 * * 1-5`).
    package static func columns(_ recurrence: DurableTimerRecord.Recurrence) -> (interval: Int64?, rule: String?) {
        switch recurrence {
        case .none: (nil, nil)
        case .interval(let nanoseconds): (nanoseconds, nil)
        case .rule(let rule): (nil, (try? JSONEncoder().encode(rule)).flatMap { String(data: $0, encoding: .utf8) })
        case .schedule(let schedule): (nil, schedule.description)
        }
    }

    package static func recurrence(interval: Int64?, rule: String?) -> DurableTimerRecord.Recurrence? {
        if let interval { return .interval(interval) }
        if let rule {
            if !rule.hasPrefix("{") {
                // A zone this system does not know is kept: the timer parks when it is due, saying so.
                let utc = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0)!
                return (try? CalendarSchedule(parsing: rule, in: utc, knownZoneRequired: false)).map { .schedule($0) }
            }
            guard let data = rule.data(using: .utf8), let decoded = try? JSONDecoder().decode(CalendarRule.self, from: data) else { return nil }
            return .rule(decoded)
        }
        return DurableTimerRecord.Recurrence.none
    }

    /// The trace-context column of a context: its headers as a JSON object with sorted keys;
    /// `nil` (SQL NULL) for none, or for one over ``DurableTimers/maximumTraceContextSize``.
    package static func traceContext(_ headers: [String: String]) -> String? {
        guard !headers.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(headers), data.count <= DurableTimers.maximumTraceContextSize else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A stored trace context's headers; none for NULL or for text that does not read as a JSON
    /// object of strings (written by hand, or cut short): a run is never stopped by its context.
    package static func traceContext(from text: String?) -> [String: String] {
        guard let text, let headers = try? JSONDecoder().decode([String: String].self, from: Data(text.utf8)) else { return [:] }
        return headers
    }
}
