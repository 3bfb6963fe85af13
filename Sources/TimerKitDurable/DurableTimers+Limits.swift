import Foundation
import TimerKit

extension DurableTimers {
    /// The earliest date a durable timer can be scheduled at: 1970-01-01 00:00:00 UTC.
    ///
    /// Deadlines are kept as 64-bit nanoseconds since 1970, and every sum and difference the runner
    /// computes on them must stay inside that range; a date outside
    /// ``earliestDate`` ..< ``latestDate`` (or a NaN or infinite one) is refused with
    /// ``DurableTimerError/invalidDate(_:)``, never stored. For "as soon as possible", schedule
    /// `after: .zero` (or at any past date in the range: it fires at once).
    public static let earliestDate = Date(timeIntervalSince1970: 0)

    /// The first date past the range a durable timer can be scheduled in: 2200-01-01 00:00:00 UTC
    /// (see ``earliestDate``). A repeating timer whose next occurrence would fall on or after it is
    /// parked with the reason instead.
    public static let latestDate = Date(timeIntervalSince1970: 7_258_118_400)

    /// The longest key, namespace or handler name, in UTF-8 bytes: 512. Longer ones are refused
    /// with ``DurableTimerError/invalidKey(_:)`` (with its control characters refused too, the
    /// notifications of the PostgreSQL store always fit in PostgreSQL's 8,000 bytes).
    public static let maximumKeyLength = 512

    /// The largest payload, as its encoded JSON: 1 MiB. A larger one is refused with
    /// ``DurableTimerError/payload(key:reason:)``: keep large data elsewhere and store its id.
    public static let maximumPayloadSize = 1 << 20

    /// The largest trace context stored with a timer (``DurableTimerInstrumentation``), as its
    /// stored text: 4 KiB, room for W3C's `traceparent` (55 bytes) and a `tracestate` of the 512
    /// bytes W3C asks propagators to keep. A larger context is not stored (the schedule succeeds,
    /// and its runs start traces of their own).
    public static let maximumTraceContextSize = 4_096

    /// The longest error text kept with a timer (``DurableTimerInfo/lastError``), in UTF-8 bytes:
    /// 4,096. A longer one is cut at a character boundary, and NUL characters (which PostgreSQL's
    /// text cannot hold) become U+FFFD.
    public static let maximumErrorLength = 4_096
}

/// The ranges the runner relies on, in nanoseconds since 1970 (``DurableTimers/earliestDate``).
enum DurableLimits {
    static let earliest: Int64 = 0
    static let latest: Int64 = 7_258_118_400 * 1_000_000_000

    /// Whether `nanoseconds` is a deadline the runner keeps.
    static func contains(_ nanoseconds: Int64) -> Bool { nanoseconds >= earliest && nanoseconds < latest }

    /// A date's nanoseconds since 1970, if it is finite and in the range.
    static func nanoseconds(of date: Date) throws(DurableTimerError) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { throw .invalidDate("\(seconds) is not a date") }
        let nanoseconds = date.nanosecondsSince1970
        guard contains(nanoseconds) else { throw .invalidDate("\(date) is outside \(DurableTimers.earliestDate) ..< \(DurableTimers.latestDate)") }
        return nanoseconds
    }

    /// A key, namespace or handler name: 1 to 512 bytes of UTF-8, no control characters.
    static func validate(key: String) throws(DurableTimerError) {
        let bytes = key.utf8
        guard !bytes.isEmpty, bytes.count <= DurableTimers.maximumKeyLength, !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw .invalidKey(key)
        }
    }

    static func isValid(key: String) -> Bool { (try? validate(key: key)) != nil }

    /// An error text as it is stored: NUL replaced, at most ``DurableTimers/maximumErrorLength`` bytes.
    static func storedError(_ text: String) -> String {
        var text = text.contains("\u{0}") ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
        guard text.utf8.count > DurableTimers.maximumErrorLength else { return text }
        var cut = ""
        for character in text {
            guard cut.utf8.count + character.utf8.count <= DurableTimers.maximumErrorLength - 3 else { break }
            cut.append(character)
        }
        text = cut + "…"
        return text
    }
}
