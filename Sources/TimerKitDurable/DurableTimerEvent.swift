/// What a runner did: the events behind its metrics and logs (``DurableTimers/Options/onEvent``;
/// the `TimerKitDurableMetrics` product turns them into swift-metrics metrics and swift-log
/// messages).
///
/// An event is told synchronously, on the task that caused it: an observer records it (a counter,
/// a log line) and returns; it must not wait. Failures the runner met on its own go to
/// ``DurableTimers/Options/onError`` instead.
public enum DurableTimerEvent: Sendable, Hashable {
    /// A claim asked the store for `requested` due timers and took `claimed` of them; the others
    /// were held by another runner's lease, moved, or gone.
    case claimed(requested: Int, claimed: Int)
    /// A handler started, `lateness` after its occurrence's due time by the store's clock (less
    /// than zero for a manual ``DurableTimers/fire(key:)`` ahead of time).
    case started(key: String, handler: String, attempt: Int, lateness: Duration)
    /// A handler ended after `duration`; `outcome` says what became of the occurrence.
    case ended(key: String, handler: String, duration: Duration, outcome: Outcome)

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
    }
}
