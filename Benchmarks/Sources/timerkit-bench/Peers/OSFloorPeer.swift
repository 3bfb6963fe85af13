import CBenchShims
import Foundation

/// The floor: a thread of its own per timer, looping `clock_nanosleep(CLOCK_MONOTONIC,
/// TIMER_ABSTIME)` on absolute deadlines, with its timer slack at 1 ns (the kernel's default is
/// 50 µs). No timer library can wake a thread sooner than this on the same machine.
final class OSFloorPeer: Peer {
    typealias OneShot = Never

    static let name = "os-floor"
    static let capabilities: Capabilities = [.repeating]
    static let limitations =
        "os-floor: a lower bound for latency only — one sleeping thread per timer, no cancellable one-shots (churn, scale), no tolerance or 10k threads (wakeups), no other context to deliver to (busy-same)"

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.monotonic() }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let stopped = StopFlag()
        let thread = Thread {
            cbench_set_timer_slack(1)
            var deadline = first
            while !stopped.isSet {
                _ = cbench_sleep_until_monotonic(deadline)
                handler(Tick(now: KernelClock.monotonic(), scheduled: deadline))
                deadline += interval
            }
        }
        thread.name = "bench.os-floor"
        thread.qualityOfService = .userInteractive
        thread.start()
        return Repeater { stopped.set() }
    }
}
