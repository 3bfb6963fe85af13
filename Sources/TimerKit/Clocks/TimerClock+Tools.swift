/// The seam between the core and the tools built on it (`Countdown`, `FrameClock`, `Debouncer`,
/// `Throttler`, `TimerRegistry`, the async sequences): everything they need from a clock or a timer,
/// and all they may use. No tool reaches into the engine, a timer's state, or another tool.
extension TimerClock {
    /// The clock's reading in nanoseconds since its origin: one read, no instant built.
    @inline(__always)
    var nanosecondsNow: Int64 { engine.now() }

    /// The executor a tool's own tasks prefer: a virtual clock's, so that an advance waits for
    /// them as for any sleeper; `nil` on the system clocks.
    var toolExecutor: (any TaskExecutor)? { engine.taskExecutor }

    /// The deadline a start names, in nanoseconds on this clock, read against `now` (C1, C17):
    /// as a timer computes its first deadline, with `interval` for a start of `nil`.
    func deadline(of start: TimerStart, interval: Int64, now: Int64) throws(TimerError) -> Int64 {
        try ScheduledTimer.firstDeadline(start, interval: interval, now: { now }, kind: kind)
    }

    /// Whether the clock was shut down: nothing can be scheduled on it any more.
    var isShutDown: Bool { engine.hasShutDown.load(ordering: .acquiring) }

    /// A repeat interval or a unit, checked as a timer checks its interval (C17): positive and
    /// representable, in nanoseconds.
    static func validatedInterval(_ interval: Duration) throws(TimerError) -> Int64 {
        try ScheduledTimer.validatedInterval(interval)
    }

    /// A delay, a wait or a tolerance, checked as a timer checks its tolerance (C17): not negative
    /// and representable, in nanoseconds.
    static func validatedDelay(_ delay: Duration) throws(TimerError) -> Int64 {
        try ScheduledTimer.validatedTolerance(delay)
    }
}

extension ScheduledTimer {
    /// Whether a run of the handler has begun and not yet returned (C8): what a registry's cancel
    /// reports as `.cancelledWhileRunning`.
    var isRunUnderWay: Bool {
        runGate.isUnderWay
    }

    /// Asks the timer not to warn when it is released while suspended: an `AsyncSequence` that
    /// ends its iteration drops its suspended timer on purpose.
    func releaseSilentlyWhenSuspended() {
        withShard { _, _ in machine.releasesSilentlyWhenSuspended = true }
    }
}
