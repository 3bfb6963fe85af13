import Dispatch
import Synchronization

/// Where one-shot timers report their fire: slot `id` gets the instant the handler ran (on the
/// peer's clock). Each slot is written by one handler only; the counter publishes them.
final class FireLog: @unchecked Sendable {
    let times: UnsafeMutablePointer<Int64>
    let capacity: Int
    private let fired = Atomic<Int>(0)
    let allFired = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        self.capacity = capacity
        times = .allocate(capacity: max(capacity, 1))
        times.initialize(repeating: -1, count: max(capacity, 1))
    }

    deinit { times.deallocate() }

    @inline(__always)
    func fired(_ id: Int, at now: Int64) {
        times[id] = now
        if fired.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue == capacity { allFired.signal() }
    }

    var count: Int { fired.load(ordering: .acquiring) }
}

/// One run of a repeating timer's handler, as the peer saw it.
struct Tick: Sendable {
    /// When the handler ran, on the peer's clock (read first thing in the handler).
    var now: Int64
    /// The deadline this run is for, when the peer knows it (its own grid, or TimerKit's
    /// `TimerFire.scheduledDeadline`).
    var scheduled: Int64? = nil
    /// How many deadlines the run stands for, when the peer says (TimerKit's `deadlineCount`,
    /// a dispatch timer's `data`).
    var count: Int? = nil
}

/// Records the ticks of one repeating timer, in order; signals once `target` ticks are in.
final class TickLog: @unchecked Sendable {
    private let ticks = Mutex<[Tick]>([])
    private let target: Int
    let reachedTarget = DispatchSemaphore(value: 0)

    init(target: Int) {
        self.target = target
        ticks.withLock { $0.reserveCapacity(min(target, 100_000) + 16) }
    }

    func record(_ tick: Tick) {
        let count = ticks.withLock { ticks -> Int in
            ticks.append(tick)
            return ticks.count
        }
        if count == target { reachedTarget.signal() }
    }

    var snapshot: [Tick] { ticks.withLock { $0 } }
}

/// Counts handler runs (the wake-up scenario's handlers do nothing else).
final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    @inline(__always) func increment() { value.wrappingAdd(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}
