import Foundation

/// A schedule, or a stored timer, as ``DurableTimerInstrumentation`` is told of it.
public struct DurableScheduling: Sendable, Hashable {
    /// The runner's namespace.
    public var namespace: String
    /// The timer's key; for a batch (``DurableTimers/schedule(_:handler:misfire:ifExists:)``),
    /// the first key of the batch.
    public var key: String
    /// How many timers the schedule writes: 1, or a batch's size.
    public var count: Int
    /// The handler the timer runs.
    public var handler: String
    /// Whether the timer repeats (an interval, a calendar rule or a cron expression).
    public var repeats: Bool
    /// The first deadline (a batch's earliest); for a run, the occurrence's.
    public var deadline: Date

    /// Makes the description of a schedule or of a stored timer.
    public init(namespace: String, key: String, count: Int = 1, handler: String, repeats: Bool, deadline: Date) {
        self.namespace = namespace
        self.key = key
        self.count = count
        self.handler = handler
        self.repeats = repeats
        self.deadline = deadline
    }
}
