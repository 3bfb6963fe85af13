extension TimerInstant {
    /// The continuous-clock instant that a `ContinuousClock` instant stands for: both count the
    /// same time, including sleep (Linux `CLOCK_BOOTTIME`, Apple `mach_continuous_time`), so the
    /// conversion is the difference between the two clocks' readings, taken now.
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
    public init?(_ instant: TimerInstant) {
        guard instant.clockKind == .continuous else { return nil }
        let now = ContinuousClock.now
        self = now.advanced(by: .nanoseconds(SystemClock.now(.continuous).duration(to: instant.nanoseconds)))
    }
}

extension SuspendingClock.Instant {
    /// The `SuspendingClock` instant that a suspending ``TimerInstant`` stands for; `nil` for an
    /// instant of another clock.
    public init?(_ instant: TimerInstant) {
        guard instant.clockKind == .suspending else { return nil }
        let now = SuspendingClock.now
        self = now.advanced(by: .nanoseconds(SystemClock.now(.suspending).duration(to: instant.nanoseconds)))
    }
}
