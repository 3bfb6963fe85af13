/// What a runner did: the events behind its metrics and logs (``DurableTimers/Options/onEvent``;
/// the `TimerKitDurableMetrics` product turns them into swift-metrics metrics and swift-log
/// messages).
///
/// An event is told synchronously, on the task that caused it: an observer records it (a counter,
/// a log line) and returns; it must not wait. Failures the runner met on its own go to
/// ``DurableTimers/Options/onError`` instead.
public enum DurableTimerEvent: Sendable, Hashable {
    /// A claim asked the store for `requested` due timers and took `claimed` of them; the others
    /// were held by another runner's lease, moved, or gone. A sweep of a backlog, which asks for
    /// whatever is ready rather than for keys, tells what it took as both (a sweep that found
    /// nothing: 0 and 0).
    case claimed(requested: Int, claimed: Int)
    /// A handler started, `lateness` after its occurrence's due time by the store's clock (less
    /// than zero for a manual ``DurableTimers/fire(key:)`` ahead of time).
    case started(key: String, handler: String, attempt: Int, lateness: Duration)
    /// A handler ended after `duration`; `outcome` says what became of the occurrence.
    case ended(key: String, handler: String, duration: Duration, outcome: Outcome)
    /// A claimed timer was parked without a run: its row cannot be read by this version, its
    /// deadline is outside the range, its calendar rule has no next occurrence here (an unknown
    /// time zone), or its handler started ``DurableTimers/Options/maxAttempts`` times without
    /// finishing (the process died each time). `reason` is what ``DurableTimerInfo/lastError`` says.
    case parked(key: String, handler: String, reason: String)
    /// The runner read the keys and ready times of `timers` timers from the store in `duration`
    /// and armed them: its whole horizon (at start, every half horizon, after its connection to
    /// other instances' changes came back) or a window of it (a batch another instance wrote).
    case loaded(scope: LoadScope, timers: Int, duration: Duration)

    /// What a load of ``DurableTimerEvent/loaded(scope:timers:duration:)`` read.
    public enum LoadScope: String, Sendable, Hashable {
        /// Every timer ready within ``DurableTimers/Options/horizon`` (or the next piece of it,
        /// when it holds more than one load arms).
        case horizon
        /// The timers ready within the window of ready times that a batch written on another
        /// instance touched (PostgreSQL).
        case window
    }

    /// What became of an occurrence whose handler ended.
    public enum Outcome: Sendable, Hashable {
        /// The handler returned: a one-shot is removed, a repeating timer moves to its next
        /// occurrence.
        case completed
        /// The handler threw on attempt `attempt`; the occurrence runs again after the retry delay.
        case retrying(attempt: Int, error: String)
        /// The handler threw on its last attempt, or the payload did not decode: the timer is
        /// parked as failed (its ``DurableTimerInfo/state``) until
        /// ``DurableTimers/retry(key:)``.
        case parked(error: String)
        /// The timer was removed (``DurableTimers/cancel(key:)``, here or on another instance) or
        /// replaced while its handler ran: the handler's task was cancelled, and nothing was
        /// written for the run.
        case cancelled
        /// The runner shut down while the handler ran: its task was cancelled when the grace
        /// period ended, it threw, and the claim was given back (the attempt does not count).
        case released
    }
}
