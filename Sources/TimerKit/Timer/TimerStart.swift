import Foundation

/// When a timer's first deadline is.
///
/// A deadline in the past is not an error: the timer fires at once (C17).
public enum TimerStart: Sendable, Hashable {
    /// As soon as possible.
    case now
    /// After a delay from now, on the timer's clock. A negative delay is a deadline in the past.
    case after(Duration)
    /// At an instant of the timer's clock.
    case at(TimerInstant)
    /// At a calendar date. On the wall clock this is the exact instant, and the timer follows changes
    /// to the system clock; on the other clocks it is the delay from now until the date.
    case date(Date)
}
