import Foundation

/// Validation of a timer's input (C17), shared by every factory, `reschedule`, callbacks and the
/// tools' seam: durations that are negative, zero where that means nothing, or beyond the clock's
/// range are refused with a clear ``TimerError``, never wrapped or trapped.
extension ScheduledTimer {
    static func validatedInterval(_ interval: Duration) throws(TimerError) -> Int64 {
        guard interval > .zero else { throw .nonPositiveInterval(interval) }
        guard let nanoseconds = interval.exactNanoseconds else { throw .durationOverflow }
        // Sub-nanosecond intervals round up to 1 ns rather than to a zero interval.
        return max(nanoseconds, 1)
    }

    static func validatedTolerance(_ tolerance: Duration) throws(TimerError) -> Int64 {
        guard tolerance >= .zero else { throw .negativeTolerance(tolerance) }
        guard let nanoseconds = tolerance.exactNanoseconds else { throw .durationOverflow }
        return nanoseconds
    }

    /// The first deadline, in nanoseconds on the clock; `nil` start means one interval from now.
    /// The clock is read only for starts relative to now.
    static func firstDeadline(_ start: TimerStart?, interval: Int64, now readNow: () -> Int64, kind: TimerClock.Kind) throws(TimerError) -> Int64 {
        func offset(_ delay: Duration) throws(TimerError) -> Int64 {
            guard let nanoseconds = delay.exactNanoseconds else { throw .durationOverflow }
            let now = readNow()
            let (deadline, overflow) = now.addingReportingOverflow(nanoseconds)
            guard !overflow else { throw .durationOverflow }
            return deadline
        }
        switch start {
        case nil:
            let (deadline, overflow) = readNow().addingReportingOverflow(interval)
            guard !overflow else { throw .durationOverflow }
            return deadline
        case .now?:
            return readNow()
        case .after(let delay)?:
            return try offset(delay)
        case .at(let instant)?:
            guard instant.clockKind == kind else { throw .clockMismatch(expected: kind, got: instant.clockKind) }
            return instant.nanoseconds
        case .date(let date)?:
            let wall = TimerInstant(date)
            if kind == .wall { return wall.nanoseconds }
            // The delay until the date, on this clock. A date far in the past saturates to the
            // clock's origin: a deadline in the past, which fires at once (C17).
            let delay = SystemClock.now(.wall).duration(to: wall.nanoseconds)
            return max(0, readNow().addingSaturating(delay))
        }
    }
}
