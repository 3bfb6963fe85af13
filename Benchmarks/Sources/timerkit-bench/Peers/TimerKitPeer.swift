import Dispatch
import TimerKit

/// TimerKit on a dedicated continuous clock (CLOCK_BOOTTIME on Linux), delivering on the engine
/// thread: the lowest-latency delivery. Its blockable context is a serial dispatch queue.
final class TimerKitPeer: Peer {
    typealias OneShot = ScheduledTimer

    static let name = "timerkit"
    static let capabilities: Capabilities = [.oneShot, .repeating, .tolerance, .blockable, .manyRepeating]

    let clock = TimerClock.dedicated(.continuous)
    let blockedQueue = DispatchQueue(label: "bench.timerkit.blocked")

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.boottime() }

    private func delivery(_ delivery: Delivery) -> TimerDelivery {
        switch delivery {
        case .standard: .engineThread
        case .blockable: .queue(blockedQueue)
        }
    }

    private func instant(_ nanoseconds: Int64) -> TimerStart {
        .at(TimerInstant(kind: .continuous, nanoseconds: nanoseconds))
    }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> ScheduledTimer {
        try ScheduledTimer.once(at: instant(deadline), clock: clock, delivery: .engineThread) { _, _ in
            log.fired(id, at: KernelClock.boottime())
        }
    }

    func cancel(_ timer: ScheduledTimer) { timer.invalidate() }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        try ScheduledTimer.once(at: instant(deadline), clock: clock, delivery: self.delivery(delivery)) { _, _ in work() }
    }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let timer = try ScheduledTimer.repeating(
            every: .nanoseconds(interval), first: instant(first), tolerance: .nanoseconds(tolerance),
            clock: clock, delivery: self.delivery(delivery)
        ) { _, fire in
            let now = KernelClock.boottime()
            handler(Tick(now: now, scheduled: fire.scheduledDeadline.nanoseconds, count: fire.deadlineCount))
        }
        return Repeater { timer.invalidate() }
    }

    func wakeUpCount() -> Int? { clock.wakeUpCount }
}
