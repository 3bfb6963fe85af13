import TimerKit

/// `Task.sleep` on a TimerKit clock (`TimerClock: Clock`, a dedicated continuous clock): one task
/// per timer as in task-sleep, each sleep one entry in the engine's store, resumed by the engine
/// and coalesced by its tolerance. Raced against `Task.sleep` on `ContinuousClock` in the wake-up
/// scenario.
final class TaskSleepTimerKitPeer: Peer {
    typealias OneShot = Task<Void, Never>

    static let name = "task-sleep-timerkit"
    static let capabilities: Capabilities = [.oneShot, .anyThread, .repeating, .tolerance, .manyRepeating]
    static let limitations = "task-sleep-timerkit: busy-same n/a (its blockable context would be task-sleep's actor)"

    let clock = TimerClock.dedicated(.continuous)

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.boottime() }

    @inline(__always) func instant(_ nanoseconds: Int64) -> TimerInstant {
        TimerInstant(kind: .continuous, nanoseconds: nanoseconds)
    }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> Task<Void, Never> {
        let until = instant(deadline)
        return Task { [clock] in
            do { try await Task.sleep(until: until, clock: clock) } catch { return }
            log.fired(id, at: KernelClock.boottime())
        }
    }

    func cancel(_ timer: Task<Void, Never>) { timer.cancel() }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let task = Task { [clock] in
            var deadline = first
            while true {
                do {
                    try await Task.sleep(until: instant(deadline), tolerance: tolerance > 0 ? .nanoseconds(tolerance) : nil, clock: clock)
                } catch { return }
                handler(Tick(now: KernelClock.boottime(), scheduled: deadline))
                deadline += interval
            }
        }
        return Repeater { task.cancel() }
    }

    func wakeUpCount() -> Int? { clock.wakeUpCount }
}
