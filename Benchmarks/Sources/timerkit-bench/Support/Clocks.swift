import CBenchShims

/// The kernel clocks the peers' deadlines are expressed in. Every peer reads, in its handler, the
/// same clock its deadlines are on, so that lateness is one subtraction on one clock.
enum KernelClock {
    /// CLOCK_MONOTONIC: DispatchTime, NIODeadline, CFRunLoop and clock_nanosleep.
    @inline(__always) static func monotonic() -> Int64 { cbench_now_monotonic() }
    /// CLOCK_BOOTTIME: TimerKit's continuous clock on Linux.
    @inline(__always) static func boottime() -> Int64 { cbench_now_boottime() }
}

/// Nanosecond helpers.
enum NS {
    static let microsecond: Int64 = 1_000
    static let millisecond: Int64 = 1_000_000
    static let second: Int64 = 1_000_000_000
}

extension Duration {
    /// The duration in whole nanoseconds (the benchmark's durations all fit).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// Sleeps the calling thread until an absolute CLOCK_MONOTONIC instant.
func sleepUntilMonotonic(_ deadline: Int64) {
    _ = cbench_sleep_until_monotonic(deadline)
}

/// Blocks the calling thread (not spinning) for `nanoseconds`.
func blockThread(for nanoseconds: Int64) {
    sleepUntilMonotonic(KernelClock.monotonic() + nanoseconds)
}
