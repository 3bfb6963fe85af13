import CTimerKitShims

/// The clock a timer runs on, and the engine that keeps that clock's pending timers (C1, C16).
///
/// Every timer is created on one clock and keeps it for life. The three system clocks are shared:
/// each has one engine, driven by one thread that sleeps until the earliest deadline.
///
/// | clock | advances while the machine sleeps | reads |
/// |---|---|---|
/// | ``continuous`` (the default) | yes | Linux `CLOCK_BOOTTIME`, Apple `mach_continuous_time` |
/// | ``suspending`` | no | Linux `CLOCK_MONOTONIC`, Apple `mach_absolute_time` |
/// | ``wall`` | yes, and jumps when the system clock is set | `CLOCK_REALTIME` (calendar time) |
///
/// Pick ``continuous`` for "60 seconds from now, whatever happens" (a resend-code countdown must
/// still end 60 s later after the phone slept), ``suspending`` for work that is pointless while the
/// machine sleeps, and ``wall`` for calendar instants: a wall timer set for 09:00 fires when the
/// system clock reads 09:00, also after the clock was changed.
///
/// For tests, `TimerKitTesting` provides a virtual clock that is advanced by hand; timers run on it
/// exactly as on a system clock.
public struct TimerClock: Sendable, Hashable, CustomStringConvertible {
    /// Which timeline a clock follows.
    public enum Kind: UInt8, Sendable, Hashable, CustomStringConvertible {
        /// Advances while the machine sleeps.
        case continuous
        /// Stops while the machine sleeps.
        case suspending
        /// Calendar time; follows changes to the system clock.
        case wall
        /// Advanced by hand (`TimerKitTesting.VirtualClock`).
        case virtual

        public var description: String {
            switch self {
            case .continuous: "continuous"
            case .suspending: "suspending"
            case .wall: "wall"
            case .virtual: "virtual"
            }
        }
    }

    let engine: TimerEngine

    init(engine: TimerEngine) {
        self.engine = engine
    }

    /// The shared continuous clock: counts time while the machine sleeps. The default.
    public static var continuous: TimerClock { TimerClock(engine: TimerEngine.sharedContinuous) }

    /// The shared suspending clock: stops while the machine sleeps.
    public static var suspending: TimerClock { TimerClock(engine: TimerEngine.sharedSuspending) }

    /// The shared wall clock: deadlines are calendar instants.
    public static var wall: TimerClock { TimerClock(engine: TimerEngine.sharedWall) }

    /// Creates a clock of the given kind with an engine and a driver thread of its own.
    ///
    /// Timers on a dedicated clock are isolated from every other clock's handlers, and the clock can
    /// be shut down with ``shutdown()``, which invalidates its timers.
    ///
    /// - Precondition: `kind` is not ``Kind/virtual`` (use `TimerKitTesting.VirtualClock`).
    public static func dedicated(_ kind: Kind) -> TimerClock {
        precondition(kind != .virtual, "TimerClock.dedicated(.virtual): create a VirtualClock from TimerKitTesting instead")
        return TimerClock(engine: TimerEngine(kind: kind, isShared: false))
    }

    /// The kind of timeline this clock follows.
    public var kind: Kind { engine.kind }

    /// The current instant on this clock.
    public var now: TimerInstant { TimerInstant(kind: kind, nanoseconds: engine.now()) }

    /// The number of timers and callbacks waiting in this clock's engine for their next deadline.
    ///
    /// Suspended timers, and timers or callbacks whose handler is running, are not counted.
    public var pendingTimerCount: Int { engine.pendingCount }

    /// How many times this clock's engine has been woken to fire timers since it started (one
    /// wake-up counts once, however many passes over the due timers it makes).
    ///
    /// Timers whose tolerance windows overlap are served by one wake-up (C3), so this grows more
    /// slowly than the number of fires.
    public var wakeUpCount: Int { engine.wakeUpCount }

    /// Stops this clock's engine: every timer on it is invalidated, its driver thread ends, and
    /// timers created on it afterwards fail with ``TimerError/clockShutDown``.
    ///
    /// Idempotent and safe from any thread, including from a timer's handler.
    ///
    /// - Precondition: the clock is not one of the shared ones (``continuous``, ``suspending``,
    ///   ``wall``), which serve the whole process.
    public func shutdown() {
        precondition(
            !engine.isShared, "TimerClock.shutdown(): the shared \(kind) clock serves the whole process; shut down only clocks made with dedicated(_:)")
        engine.shutdown()
    }

    public static func == (lhs: TimerClock, rhs: TimerClock) -> Bool { lhs.engine === rhs.engine }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(engine)) }

    public var description: String { "TimerClock(\(kind))" }
}
