import CTimerKitShims

/// Reads the system clocks behind ``TimerClock``, in nanoseconds since each clock's origin.
enum SystemClock {
    @inline(__always)
    static func now(_ kind: TimerClock.Kind) -> Int64 {
        switch kind {
        case .continuous: ctk_clock_now(0)
        case .suspending: ctk_clock_now(1)
        case .wall: ctk_clock_now(2)
        case .virtual: preconditionFailure("SystemClock.now(.virtual): a virtual clock has no system reading")
        }
    }

    /// Blocks the calling thread until `deadline` on the clock, with 1 ns timer slack: the OS floor
    /// (a thread in `clock_nanosleep` with an absolute deadline), which real-time tests measure
    /// beside the engine as their control.
    static func sleep(until deadline: Int64, _ kind: TimerClock.Kind) {
        precondition(kind != .virtual, "SystemClock.sleep(until:): a virtual clock cannot be slept on")
        ctk_sleep_until(Int32(kind.rawValue), deadline)
    }

    /// The system's id of the calling thread.
    static var currentThreadID: UInt64 { ctk_current_thread_id() }
}
