import Foundation

/// One run of a durable timer's handler, as the run history keeps it (``DurableTimers/history(key:limit:)``):
/// "did key X fire, when, how late, where" stays answerable after a one-shot is gone.
///
/// Kept per ``DurableTimers/Options/history``: the last runs of each timer, for a while.
public struct DurableTimerRun: Sendable, Hashable {
    /// How a run ended.
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        /// The handler returned: the occurrence is done (a one-shot removed, a repeating timer
        /// moved to its next occurrence).
        case succeeded
        /// The handler threw (or outlived its timeout): the occurrence is tried again later.
        case failed
        /// The handler failed for the last time, or the payload did not decode, or the row could
        /// not be read: the timer is parked with ``DurableTimerRun/error``.
        case parked
    }

    /// The timer's key.
    public let key: String
    /// The handler that ran.
    public let handler: String
    /// The occurrence's sequence number (its ``DurableFire/idempotencyKey`` ends with it).
    public let sequence: Int64
    /// Which attempt at the occurrence this was (1 for the first).
    public let attempt: Int
    /// The occurrence the run stood for (its grid deadline); for a manual fire, the occurrence
    /// that was next.
    public var due: Date { Date(nanosecondsSince1970: dueNanoseconds) }
    /// When the handler started (the runner's reading of the durable clock).
    public var started: Date { Date(nanosecondsSince1970: startedNanoseconds) }
    /// When the handler ended.
    public var ended: Date { Date(nanosecondsSince1970: endedNanoseconds) }
    /// How it ended.
    public let outcome: Outcome
    /// The instance that ran it (``DurableTimers/instance``).
    public let instance: String
    /// What the handler threw, or why the timer was parked.
    public let error: String?

    /// How long after its occurrence the handler started (negative for a manual fire ahead of it).
    public var lateness: Duration { .nanoseconds(dueNanoseconds.duration(to: startedNanoseconds)) }

    /// How long the handler ran.
    public var duration: Duration { .nanoseconds(startedNanoseconds.duration(to: endedNanoseconds)) }

    /// The instants, in nanoseconds since 1970 (as stored).
    package let dueNanoseconds: Int64
    package let startedNanoseconds: Int64
    package let endedNanoseconds: Int64

    package init(
        key: String, handler: String, sequence: Int64, attempt: Int, due: Int64, started: Int64, ended: Int64, outcome: Outcome, instance: String,
        error: String?
    ) {
        self.key = key
        self.handler = handler
        self.sequence = sequence
        self.attempt = attempt
        self.dueNanoseconds = due
        self.startedNanoseconds = started
        self.endedNanoseconds = ended
        self.outcome = outcome
        self.instance = instance
        self.error = error
    }
}
