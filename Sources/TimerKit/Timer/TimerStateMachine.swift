/// A timer's state, changed only under its engine's lock.
///
/// Invariant: a timer is in its engine's store exactly when it is active, not suspended and not
/// running. "Running" means a delivery is under way: the timer was handed to its target and the
/// holder of the flag calls ``ScheduledTimer/nextStep(now:_:)`` until it says stop. So runs never
/// overlap (C14), and the decision about what a fire means is made at the moment the run starts,
/// when suspension, invalidation and the clock are all known.
struct TimerStateMachine {
    enum Lifecycle {
        case active
        case invalid
    }

    // The fields are ordered so that the one-byte ones pack together after the eight-byte ones.
    // What a timer needs only after missing deadlines — the skipped deadlines under `.skip`, the
    // rest of a burst — lives in the timer's extras (``ScheduledTimer/burst``), allocated on first
    // use (a pending timer's bytes are counted in BENCHMARKS.md).

    /// The next deadline on the grid (C4): the first deadline plus a whole number of intervals.
    var nextDeadline: Int64
    /// The repeat interval in nanoseconds; 0 for a one-shot timer.
    var interval: Int64
    var fireCount = 0
    var lifecycle = Lifecycle.active
    var isSuspended = false
    var isRunning = false
    /// Whether `nextDeadline` passed while the timer was suspended: then it counts as missed (C5, C9).
    var missedWhileSuspended = false
    /// Whether a run requested by `fire()` has not started yet (further requests merge into it).
    var hasPendingManualFire = false

    init(firstDeadline: Int64, interval: Int64) {
        self.nextDeadline = firstDeadline
        self.interval = interval
    }

    var isRepeating: Bool { interval > 0 }
}
