#if os(Linux) || os(Android)
import CTimerKitShims
import Foundation

/// Linux's engine driver: one thread blocked in `read(2)` on a `timerfd` armed with an absolute
/// deadline on the engine's own clock (`CLOCK_BOOTTIME`, `CLOCK_MONOTONIC` or `CLOCK_REALTIME`).
///
/// A `timerfd` is an hrtimer: it never wakes early, it counts sleep on `CLOCK_BOOTTIME`, and on the
/// wall clock it also wakes when the system clock is set (`TFD_TIMER_CANCEL_ON_SET`), so wall
/// deadlines follow clock changes. The thread's timer slack is set to 1 ns. Re-arming from another
/// thread to an earlier deadline takes effect at once; no wake-up pipe is needed.
final class TimerFDDriver: EngineDriver, @unchecked Sendable {
    // `fd` is written once in init and closed by the driver thread when it ends.
    private let fd: Int32
    private let isWall: Bool
    private let name: String

    init(kind: TimerClock.Kind) {
        let kindCode: Int32 =
            switch kind {
            case .continuous: 0
            case .suspending: 1
            case .wall: 2
            case .virtual: preconditionFailure("TimerFDDriver: a virtual clock has no driver")
            }
        let fd = ctk_timerfd_create(kindCode)
        precondition(fd >= 0, "TimerFDDriver: timerfd_create failed (errno \(errno))")
        self.fd = fd
        self.isWall = kind == .wall
        // Linux keeps at most 15 bytes of a thread name.
        self.name = "tk.\(kind)"
    }

    func start(serving engine: TimerEngine) {
        let fd = self.fd
        let name = self.name
        let thread = Thread {
            // Named from inside the thread, by the system call: Foundation's `Thread.name` reaches the
            // system only when it is set after `start()` has returned to the creating thread, and a
            // new Linux thread otherwise keeps the name of the thread that created it (a dispatch
            // worker's, for the shared clocks, which are made lazily from whatever thread asks).
            name.withCString { ctk_set_current_thread_name($0) }
            engine.driverThreadStarted()
            ctk_set_precise_timer_slack()
            while engine.serviceDueTimers() {
                if ctk_timerfd_wait(fd) < 0 {
                    preconditionFailure("TimerFDDriver: read(timerfd) failed (errno \(errno))")
                }
            }
            close(fd)
        }
        thread.name = name
        thread.qualityOfService = .userInteractive
        thread.start()
    }

    func arm(at deadline: Int64) {
        // 0 disarms a timerfd, so a deadline at or before the clock's origin is armed at 1 ns.
        let value: Int64 = deadline == .max ? 0 : max(deadline, 1)
        _ = ctk_timerfd_arm(fd, value, isWall ? 1 : 0)
    }
}
#endif
