import Foundation
import TimerKit

/// A stored durable timer, as ``DurableTimers/timer(key:)`` and ``DurableTimers/timers(limit:)`` show it.
public struct DurableTimerInfo: Sendable, Hashable {
    /// Where a timer stands.
    public enum State: Sendable, Hashable {
        /// Waiting for its next occurrence (or for a retry after its handler threw).
        case scheduled
        /// Claimed by a runner whose lease has not expired: its handler is running, or the runner
        /// died and the lease will expire.
        case running
        /// Its handler failed as often as ``DurableTimers/Options/maxAttempts`` allows, or its
        /// payload cannot be decoded: parked with ``lastError`` until ``DurableTimers/retry(key:)``
        /// or ``DurableTimers/cancel(key:)``.
        case failed
        /// No handler of its name is registered with this runner: it waits, untouched.
        case orphaned
        /// Paused by ``DurableTimers/pause(key:)``, ``DurableTimers/pause(handler:)`` or
        /// ``DurableTimers/pauseNamespace()``: no instance claims it until it is resumed.
        case paused
    }

    /// The key within the namespace.
    public let key: String
    /// The registered name of the handler that runs it.
    public let handler: String
    /// The occurrence it waits for (its grid deadline).
    public let nextDeadline: Date
    /// When it may next be claimed: the deadline, a retry's time, or a lease's expiry.
    public let readyAt: Date
    /// The repeat interval, if it repeats on a fixed grid.
    public let interval: Duration?
    /// The calendar rule, if it was scheduled with one (``schedule`` has its occurrences too).
    public let rule: CalendarRule?
    /// The calendar schedule, if it follows one: a cron expression's, or a calendar rule's.
    public let schedule: CalendarSchedule?
    /// The runner holding it (its claim's token: the instance's name and a claim number), if
    /// one has claimed it; see ``leaseUntil``.
    public let owner: String?
    /// When the holder's lease ends: until then no other runner claims it.
    public let leaseUntil: Date?
    /// The misfire policy.
    public let misfire: MisfirePolicy
    /// How many fires have completed.
    public let fireCount: Int64
    /// Attempts at the current occurrence (0 before the first).
    public let attempts: Int
    /// The last error its handler threw, or why it was parked.
    public let lastError: String?
    /// Where it stands.
    public let state: State
    /// Its last recorded run (``DurableTimers/history(key:limit:)``): filled in by
    /// ``DurableTimers/timer(key:)`` and ``DurableTimers/why(key:)``, `nil` in lists.
    public internal(set) var lastRun: DurableTimerRun?
}

extension DurableTimerInfo {
    /// The timer's status at `now` as ``DurableTimerQuery/Status`` names them (what a query by
    /// status decides in the database, decided here for a timer already read): for the tool's and
    /// the dashboard's tables.
    package func status(at now: Date) -> DurableTimerQuery.Status {
        if state == .paused { return .paused }
        if state == .failed { return .parked }
        if let leaseUntil, leaseUntil > now { return .running }
        if readyAt <= now { return .due }
        return attempts > 0 ? .retrying : .scheduled
    }
}
