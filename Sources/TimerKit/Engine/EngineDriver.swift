/// What wakes an engine: the one kernel object per clock that sleeps until the earliest deadline
/// (C16).
///
/// A driver calls ``TimerEngine/serviceDueTimers()`` when its deadline comes (and also spuriously;
/// the engine re-reads the clock), until that returns `false`.
protocol EngineDriver: Sendable {
    /// Starts the driver's thread or source. Called once, after the engine is fully initialized.
    func start(serving engine: TimerEngine)

    /// Wakes the engine at `deadline` (nanoseconds on the engine's clock) instead of any earlier
    /// request. `Int64.max` disarms. Called under the engine's arming lock, so calls are ordered.
    func arm(at deadline: Int64)

    /// Whether the caller runs on the driver: its thread, or its queue.
    var isCurrent: Bool { get }
}

/// Which driver wakes a system clock's engine on this build.
///
/// The kernel timer (``KernelTimerDriver``) wherever the kernel has an absolute timer on the clock:
/// every system clock on Linux; the continuous and suspending clocks on Apple platforms. Otherwise
/// ``DispatchDriver``: the wall clock on Apple platforms, and every clock when the package is built
/// with `-DTIMERKIT_DISPATCH_DRIVER` (CI runs the whole suite that way on Linux, so that the
/// dispatch driver is proven by the same tests as the kernel timer).
enum EngineDriverKind: Sendable, CustomStringConvertible {
    case kernelTimer
    case dispatch

    /// The driver a system clock of `kind` gets.
    static func serving(_ kind: TimerClock.Kind) -> EngineDriverKind {
        #if TIMERKIT_DISPATCH_DRIVER
        .dispatch
        #elseif os(Linux) || os(Android) || canImport(Darwin)
        KernelTimerDriver.supports(kind) ? .kernelTimer : .dispatch
        #else
        .dispatch
        #endif
    }

    /// Makes a driver of this kind for a system clock of `kind`.
    func make(for kind: TimerClock.Kind) -> any EngineDriver {
        switch self {
        case .dispatch:
            return DispatchDriver(kind: kind)
        case .kernelTimer:
            #if os(Linux) || os(Android) || canImport(Darwin)
            return KernelTimerDriver(kind: kind)
            #else
            preconditionFailure("EngineDriverKind: no kernel timer on this platform")
            #endif
        }
    }

    var description: String {
        switch self {
        case .kernelTimer: "kernel timer"
        case .dispatch: "dispatch"
        }
    }
}
