/// A page of stored timers (``DurableTimers/timers(matching:)``).
public struct DurableTimerPage: Sendable, Hashable {
    /// The timers, in key order.
    public let timers: [DurableTimerInfo]
    /// Where the next page starts; `nil` when this page is the last.
    public let next: DurableTimerQuery.Cursor?
}
