import Foundation

/// One run of a ``CalendarTimer``: the occurrence it stands for, when it began, and what it
/// coalesced.
public struct CalendarFire: Sendable, Hashable {
    /// The occurrence this run is for: the latest one that had come when the run began (C5).
    public let occurrence: Date
    /// When the run began, on the timer's clock.
    public let firedAt: Date
    /// Occurrences that came and went without a run of their own since the last run — the machine
    /// slept, the system clock jumped forward, or the previous run was still going — coalesced
    /// into this one (C5).
    public let skippedOccurrences: Int
    /// 1 for the first run, then 2, 3, … (manual runs included).
    public let sequenceNumber: Int
    /// Whether ``CalendarTimer/fire()`` asked for this run; it stands for no occurrence
    /// (``occurrence`` is then the time of the request).
    public let isManual: Bool

    /// How late the run began after its occurrence; zero if not late.
    public var lateness: Duration {
        let seconds = firedAt.timeIntervalSince(occurrence)
        return seconds > 0 ? .nanoseconds(Int64(seconds * 1e9)) : .zero
    }
}
