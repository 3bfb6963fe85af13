import Foundation
import Synchronization
import Testing

@testable import TimerKit

/// Collects values from handlers running on other threads, behind TimerKit's own lock (one lock
/// wrapper for the library, the tool and the tests; ThreadSanitizer sees it).
final class Recorder<Value: Sendable>: Sendable {
    private let values = Locked<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }

    var all: [Value] { values.withLock { $0 } }

    var count: Int { values.withLock { $0.count } }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    @discardableResult
    func increment() -> Int { value.add(1, ordering: .relaxed).newValue }

    func decrement() { value.subtract(1, ordering: .relaxed) }

    var current: Int { value.load(ordering: .relaxed) }
}

/// Waits, polling, until `condition` holds or `timeout` passes; returns whether it held.
/// A liveness bound, generous for a loaded 2-core machine (under ThreadSanitizer beside busy
/// loops, a thread once waited more than ten seconds for a core): it costs nothing when the
/// condition holds.
func eventually(
    isolation: isolated (any Actor)? = #isolation,
    timeout: Duration = .seconds(60),
    _ condition: () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while clock.now < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// Runs `body` on a thread of its own and returns its result. A test that computes for seconds
/// without suspending (a model test over 10⁵ sequences) runs its loop here, so that it does not hold
/// one of the cooperative pool's threads — on two cores, half of what every async test running beside
/// it has (a starved pool once kept another suite's tasks from running for ten seconds).
func onOwnThread<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// The suites that measure real time run one at a time, so that none is the others' load (the
/// 8-thread stress test would otherwise decide the lateness of every other test). Virtual-clock
/// suites stay parallel: they measure nothing.
///
/// Five minutes a test: the limit catches a hang, not slowness. Under ThreadSanitizer on two busy
/// cores the stress test alone has taken two and a half.
@Suite("Real time", .serialized, .timeLimit(.minutes(5)))
enum RealTime {}

/// A flag that any thread can set and read.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .sequentiallyConsistent) }

    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}

/// The control of a real-time test: a thread of its own sleeping in `clock_nanosleep` to absolute
/// deadlines on the clock under test (timer slack 1 ns) — the OS floor at the same moment. What the
/// engine's fires may be compared with, where a test bounds lateness: a fixed number of
/// milliseconds holds on an idle machine only.
final class ControlSleeper: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let latenesses = Recorder<Duration>()

    /// Starts sleeping to each of `deadlines` (instants of one system clock), in order.
    init(deadlines: [TimerInstant]) {
        Thread { [latenesses, done] in
            for deadline in deadlines {
                SystemClock.sleep(until: deadline.nanoseconds, deadline.clockKind)
                let woke = SystemClock.now(deadline.clockKind)
                latenesses.append(.nanoseconds(woke - deadline.nanoseconds))
            }
            done.signal()
        }.start()
    }

    /// How late the control woke for each deadline, once it has slept to all of them.
    func lateness() async -> [Duration] {
        await withCheckedContinuation { continuation in
            DispatchQueue(label: "control").async { [done] in
                done.wait()
                done.signal()
                continuation.resume()
            }
        }
        return latenesses.all
    }
}

extension [Duration] {
    /// The median, or zero for an empty array.
    var median: Duration { isEmpty ? .zero : sorted()[count / 2] }
}
