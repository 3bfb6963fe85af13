extension TimerInstant {
    /// The continuous-clock instant that a `ContinuousClock` instant stands for: both count the
    /// same time, including sleep (Linux `CLOCK_BOOTTIME`, Apple `mach_continuous_time`), so the
    /// conversion is the difference between the two clocks' readings, taken now.
    ///
    /// The source clock is read first. A pause between the readings moves the result later,
    /// never earlier, so a converted deadline is never early.
    public init(_ instant: ContinuousClock.Instant) {
        self.init(kind: .continuous, converting: instant, from: ContinuousClock.now)
    }

    /// The suspending-clock instant that a `SuspendingClock` instant stands for (both stop while
    /// the machine sleeps).
    public init(_ instant: SuspendingClock.Instant) {
        self.init(kind: .suspending, converting: instant, from: SuspendingClock.now)
    }

    private init<Instant: InstantProtocol>(kind: TimerClock.Kind, converting instant: Instant, from now: Instant) where Instant.Duration == Duration {
        let offset = now.duration(to: instant)
        self.init(kind: kind, nanoseconds: SystemClock.now(kind).addingSaturating(offset.saturatingNanoseconds))
    }
}

extension ContinuousClock.Instant {
    /// The `ContinuousClock` instant that a continuous ``TimerInstant`` stands for; `nil` for an
    /// instant of another clock.
    ///
    /// The two clocks are read one after the other, the source first. A pause between the
    /// readings moves the result later, never earlier, so a converted deadline is never early.
    public init?(_ instant: TimerInstant) {
        guard instant.clockKind == .continuous else { return nil }
        let offset = SystemClock.now(.continuous).duration(to: instant.nanoseconds)
        self = ContinuousClock.now.advanced(by: .nanoseconds(offset))
    }
}

extension SuspendingClock.Instant {
    /// The `SuspendingClock` instant that a suspending ``TimerInstant`` stands for; `nil` for an
    /// instant of another clock. Like the continuous conversion, it errs late, never early.
    public init?(_ instant: TimerInstant) {
        guard instant.clockKind == .suspending else { return nil }
        let offset = SystemClock.now(.suspending).duration(to: instant.nanoseconds)
        self = SuspendingClock.now.advanced(by: .nanoseconds(offset))
    }
}
