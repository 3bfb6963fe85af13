/// What a durable timer does about the occurrences that passed while nothing could fire them — the
/// process was down, the machine asleep, the runner behind (C5's vocabulary, for downtime).
///
/// An occurrence is *on time* when the runner reaches it within ``DurableTimers/Options/grace``
/// (one second by default); the policies differ only in what they do with the late ones. Under
/// every policy the occurrences add up: each fire's `deadlineCount + skippedDeadlineCount` accounts
/// for every occurrence since the previous fire exactly once.
public enum MisfirePolicy: Sendable, Hashable, Codable, CustomStringConvertible {
    /// One fire now stands for every missed occurrence (``DurableFire/deadlineCount``); then the
    /// timer continues at its next occurrence after now. The default.
    case once
    /// Missed occurrences get no fire: the timer continues at its next occurrence after now, whose
    /// fire counts them in ``DurableFire/skippedDeadlineCount``. An occurrence reached within the
    /// grace fires. A one-shot missed by more than the grace is removed without a fire.
    case skip
    /// One fire per missed occurrence, in order, at most `max` of them (the latest `max`; the older
    /// ones are counted as skipped).
    case all(max: Int)
    /// Like ``once``, for the occurrences missed by at most `window`; older ones are skipped. A
    /// one-shot missed by more than `window` is removed without a fire.
    case within(Duration)

    public var description: String {
        switch self {
        case .once: "once"
        case .skip: "skip"
        case .all(let max): "all(max: \(max))"
        case .within(let window): "within(\(window))"
        }
    }
}
