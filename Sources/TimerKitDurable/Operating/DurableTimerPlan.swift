import Foundation

/// What a durable timer will do (``DurableTimers/plan(key:count:outage:)``): its next
/// occurrences — in its schedule's zone, across clock changes — and what its misfire policy
/// would make of an outage of a given length.
public struct DurableTimerPlan: Sendable, Hashable, CustomStringConvertible {
    /// What happens when the runners come back after an outage that began at the timer's next
    /// occurrence.
    public struct AfterOutage: Sendable, Hashable {
        /// How long the runners were away.
        public let outage: Duration
        /// Whether the handler runs once they are back.
        public let fires: Bool
        /// How many occurrences that one run stands for (``DurableFire/deadlineCount``).
        public let standsFor: Int
        /// How many occurrences are skipped (``DurableFire/skippedDeadlineCount``).
        public let skipped: Int
        /// The occurrence the timer waits for afterwards; `nil` when it ends.
        public let next: Date?
        /// Why the timer would be parked instead, if it would.
        public let parkedBecause: String?
    }

    /// The key.
    public let key: String
    /// Its misfire policy.
    public let misfire: MisfirePolicy
    /// The next occurrences, the stored one first.
    public let occurrences: [Date]
    /// The zone its calendar schedule lives in, if it has one (occurrences are shown there).
    public let timeZone: TimeZone?
    /// The outage asked about, if one was.
    public let afterOutage: AfterOutage?

    package init(key: String, misfire: MisfirePolicy, occurrences: [Date], timeZone: TimeZone?, afterOutage: AfterOutage?) {
        self.key = key
        self.misfire = misfire
        self.occurrences = occurrences
        self.timeZone = timeZone
        self.afterOutage = afterOutage
    }

    /// The occurrences one per line (with the zone's offset for a calendar schedule), then the
    /// outage's outcome.
    public var description: String {
        func show(_ date: Date) -> String {
            timeZone.map { DurableTimerText.instant(date, in: $0) + " (\($0.identifier))" } ?? DurableTimerText.instant(date)
        }
        var lines = ["next occurrences of '\(key)' (misfire policy \(misfire)):"]
        lines += occurrences.map { "  " + show($0) }
        if let outage = afterOutage {
            let what: String
            if let reason = outage.parkedBecause {
                what = "it would be parked: \(reason)"
            } else if outage.fires {
                what =
                    "its handler runs once, standing for \(outage.standsFor) occurrence\(outage.standsFor == 1 ? "" : "s")"
                    + (outage.skipped > 0 ? ", \(outage.skipped) skipped" : "")
                    + (outage.next.map { "; then it waits for \(show($0))" } ?? "; then it ends")
            } else {
                what = "its handler does not run (\(outage.skipped) skipped)" + (outage.next.map { "; it waits for \(show($0))" } ?? "; it ends")
            }
            lines.append("after an outage of \(DurableTimerText.duration(outage.outage)) from its next occurrence: \(what)")
        }
        return lines.joined(separator: "\n")
    }
}
