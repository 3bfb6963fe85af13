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
}
