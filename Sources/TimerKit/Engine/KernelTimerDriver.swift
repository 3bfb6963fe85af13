#if os(Linux) || os(Android) || canImport(Darwin)
import CTimerKitShims
import Foundation
import Synchronization

/// The engine driver of a system clock where the kernel has an absolute timer on that clock: one
/// thread blocked on a kernel timer armed with the earliest deadline (C16).
///
/// - Linux: a `timerfd` on `CLOCK_BOOTTIME` (continuous: counts sleep), `CLOCK_MONOTONIC`
///   (suspending) or `CLOCK_REALTIME` (wall, armed with `TFD_TIMER_CANCEL_ON_SET`, so that setting
///   the system clock wakes the engine and wall deadlines follow the change). The thread's timer
///   slack is set to 1 ns.
/// - Apple platforms, continuous and suspending clocks: a kqueue with one `EVFILT_TIMER` whose
///   absolute deadline is in Mach ticks, on `mach_continuous_time` (counts sleep:
///   `NOTE_MACH_CONTINUOUS_TIME`) or `mach_absolute_time`, with `NOTE_CRITICAL` (no coalescing).
///   The wall clock stays on ``DispatchDriver``: Dispatch's wall timers follow changes to the
///   system clock, a kqueue timer does not.
///
/// Either kernel timer never expires before its deadline, and re-arming it from another thread to
/// an earlier deadline takes effect at once, so no wake-up pipe is needed. The C shim
/// (`ctk_kernel_timer_*`) is the seam: this class is the same on every platform, and tested on
/// Linux; the kqueue's arithmetic (`ctk_kevent_timer_for`) is tested on Linux too.
final class KernelTimerDriver: EngineDriver, @unchecked Sendable {
    // `timer` is written once in init and closed by the driver thread when it ends.
    private let timer: Int32
    private let kindCode: Int32
    private let name: String
    /// The system's id of the driver's thread, once it has started.
    private let threadID = Atomic<UInt64>(0)

    init(kind: TimerClock.Kind) {
        precondition(kind != .virtual, "KernelTimerDriver: a virtual clock has no driver")
        kindCode = Int32(kind.rawValue)
        let timer = ctk_kernel_timer_create(kindCode)
        precondition(timer >= 0, "KernelTimerDriver: no kernel timer for the \(kind) clock (errno \(errno))")
        self.timer = timer
        // Linux keeps at most 15 bytes of a thread name.
        self.name = "tk.\(kind)"
    }

    /// Whether the platform has a kernel timer with absolute deadlines on a clock of this kind.
    static func supports(_ kind: TimerClock.Kind) -> Bool {
        #if canImport(Darwin)
        kind == .continuous || kind == .suspending
        #else
        kind != .virtual
        #endif
    }

    func start(serving engine: TimerEngine) {
        let timer = self.timer
        let name = self.name
        let thread = Thread { [self] in
            // Named from inside the thread, by the system call: Foundation's `Thread.name` reaches the
            // system only when it is set after `start()` has returned to the creating thread, and a
            // new Linux thread otherwise keeps the name of the thread that created it (a dispatch
            // worker's, for the shared clocks, which are made lazily from whatever thread asks).
            name.withCString { ctk_set_current_thread_name($0) }
            self.threadID.store(ctk_current_thread_id(), ordering: .releasing)
            ctk_set_precise_timer_slack()
            while engine.serviceDueTimers() {
                if ctk_kernel_timer_wait(timer) < 0 {
                    preconditionFailure("KernelTimerDriver: waiting on the kernel timer failed (errno \(errno))")
                }
            }
            close(timer)
        }
        thread.name = name
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    var isCurrent: Bool { threadID.load(ordering: .acquiring) == ctk_current_thread_id() }

    /// The system's id of the driver's thread (0 until it has started).
    var thread: UInt64 { threadID.load(ordering: .acquiring) }

    func arm(at deadline: Int64) {
        // 0 disarms, so a deadline at or before the clock's origin is armed at 1 ns.
        let value: Int64 = deadline == .max ? 0 : max(deadline, 1)
        _ = ctk_kernel_timer_arm(timer, kindCode, value)
    }
}
#endif
