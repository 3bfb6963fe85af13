/// How closely a timer's fires follow its deadlines: by sleeping (the default), or by sleeping and
/// then waiting actively for the last stretch.
///
/// With ``standard`` the engine's thread sleeps in the kernel until the deadline, so a fire comes as
/// late as the operating system wakes a sleeping thread — the *OS floor*, typically 50–200 µs on a
/// Linux server, more on a loaded or virtual machine. TimerKit's standard mode stays close to that
/// floor (its p99 lateness 1.1–1.2× the floor's in the benchmark).
///
/// With ``high`` the engine sleeps until shortly before the deadline — by the lead it has measured
/// its own wake-ups to need: one and a half times the decaying maximum of recent wake-up latencies
/// plus 30 µs, between 100 µs and 5 ms — then reads the clock in a loop until the deadline has come,
/// and fires. Lateness shrinks to the time it takes to read the clock and call the handler, in
/// exchange for CPU time: the engine thread spins for the rest of the lead before every fire.
/// What it buys and costs on a measured machine (lateness against the OS floor, CPU per fire) is in
/// BENCHMARKS.md, "precision with TimerPrecision.high". Use it for the few timers that need it — a frame
/// clock, an audio or measurement loop — not for timeouts.
///
/// What still holds in high precision:
/// - A fire is never early (C2) and deadlines stay on the grid (C4); missed deadlines, suspension,
///   invalidation (C8) and every other clause behave as for a standard timer.
/// - The spin happens on the clock's engine thread, so timers of the same clock whose deadlines
///   fall within a precise timer's spin run after it, late by at most the spin. Give precise timers
///   a clock of their own (``TimerClock/dedicated(_:)``) when other timers share the clock.
/// - Delivery to a queue adds the queue's own latency after the precise instant; deliver on the
///   engine thread (the default) to keep the precision.
/// - A preempted spin is late like any other thread: on a machine whose cores are all busy the
///   benefit shrinks.
/// - High precision has no tolerance: a timer asking for both is refused with
///   ``TimerError/toleranceWithHighPrecision(_:)``.
/// - On a virtual clock (`VirtualClock`, in TimerKitTesting) both precisions fire exactly at the
///   deadline.
public struct TimerPrecision: Sendable, Hashable, CustomStringConvertible {
    let isHigh: Bool

    /// Sleep until the deadline: as precise as the OS wakes a sleeping thread, at no CPU cost
    /// while waiting. The default.
    public static let standard = TimerPrecision(isHigh: false)

    /// Sleep until shortly before the deadline, then wait actively: lateness well below the OS
    /// floor, for CPU time spent spinning before every fire.
    public static let high = TimerPrecision(isHigh: true)

    public var description: String { isHigh ? "high" : "standard" }
}
