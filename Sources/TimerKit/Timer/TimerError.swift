/// Why TimerKit refused a request (C17).
///
/// TimerKit throws for input that can come from data (a duration, a tolerance, a policy limit) and
/// for requests that race with the timer's end (rescheduling a timer another thread just
/// invalidated). It traps, with a message, only on caller bugs that no data can cause, such as
/// comparing instants of two different kinds of clock.
public enum TimerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A repeating timer's interval was zero or negative.
    case nonPositiveInterval(Duration)
    /// A tolerance was negative.
    case negativeTolerance(Duration)
    /// A number of seconds was NaN or infinite.
    case nonFiniteDuration
    /// A duration, or an instant computed from one, does not fit in 64 bits of nanoseconds.
    case durationOverflow
    /// ``MissedDeadlinePolicy/burst(maxFires:)`` was given a limit below 1.
    case invalidBurstLimit(Int)
    /// A deadline was an instant of another kind of clock than the timer's.
    case clockMismatch(expected: TimerClock.Kind, got: TimerClock.Kind)
    /// The timer was invalidated before the request (for example by another thread).
    case timerInvalidated
    /// The timer's clock was shut down with ``TimerClock/shutdown()``.
    case clockShutDown
    /// A ``FrameClock`` was given a frame rate below 1 or above a billion.
    case invalidFrameRate(Int)
    /// A ``TimerRegistry`` already holds work under the key (its description is given), and the
    /// schedule asked to fail in that case (``TimerRegistry/Conflict/fail``).
    case keyInUse(String)
    /// A ``TimerRegistry`` holds nothing under the key (its description is given).
    case keyNotFound(String)
    /// A ``Debouncer`` was asked for neither its leading nor its trailing edge: it would never run.
    case noDebounceEdge
    /// A ``Throttler`` was asked for neither its leading nor its trailing edge: it would never run.
    case noThrottleEdge
    /// A main-actor ``TimerHandler`` was given a delivery other than the main queue (the delivery
    /// is given). Main-actor handlers run on the main queue: give them no delivery.
    case conflictingDelivery(TimerDelivery)
    /// A timer was asked for ``TimerPrecision/high`` and a tolerance (given): a high-precision timer
    /// fires at its deadline, so it takes no tolerance.
    case toleranceWithHighPrecision(Duration)
    /// A ``CalendarRule`` was given a field out of range, no weekday, or text it cannot read (the
    /// reason is given).
    case invalidCalendarRule(String)

    public var description: String {
        switch self {
        case .nonPositiveInterval(let interval):
            "a repeating timer's interval must be positive, got \(interval)"
        case .negativeTolerance(let tolerance):
            "a timer's tolerance must not be negative, got \(tolerance)"
        case .nonFiniteDuration:
            "a duration must be a finite number of seconds"
        case .durationOverflow:
            "the duration does not fit in 64 bits of nanoseconds (about 292 years)"
        case .invalidBurstLimit(let limit):
            "burst(maxFires:) needs a limit of at least 1, got \(limit)"
        case .clockMismatch(let expected, let got):
            "the deadline is an instant of the \(got) clock, but the timer runs on the \(expected) clock"
        case .timerInvalidated:
            "the timer was invalidated"
        case .clockShutDown:
            "the timer's clock was shut down"
        case .invalidFrameRate(let rate):
            "a frame clock needs between 1 and 1,000,000,000 frames per second, got \(rate)"
        case .keyInUse(let key):
            "the registry already holds work under the key \(key)"
        case .keyNotFound(let key):
            "the registry holds nothing under the key \(key)"
        case .noDebounceEdge:
            "a debouncer needs its leading edge, its trailing edge, or both; with neither it never runs"
        case .noThrottleEdge:
            "a throttler needs its leading edge, its trailing edge, or both; with neither it never runs"
        case .conflictingDelivery(let delivery):
            "a main-actor handler runs on the main queue and cannot be delivered to \(delivery)"
        case .toleranceWithHighPrecision(let tolerance):
            "a high-precision timer fires at its deadline and takes no tolerance (got \(tolerance))"
        case .invalidCalendarRule(let reason):
            "invalid calendar rule: \(reason)"
        }
    }
}
