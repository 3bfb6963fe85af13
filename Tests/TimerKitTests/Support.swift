import Foundation
import Synchronization
import Testing
@testable import TimerKit

/// Collects values from handlers running on other threads.
/// (An `NSLock`, not `Synchronization.Mutex`: ThreadSanitizer sees through the former only.)
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Value] = []

    func append(_ value: Value) { lock.withLock { values.append(value) } }

    var all: [Value] { lock.withLock { values } }

    var count: Int { lock.withLock { values.count } }
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
/// Real-time tests use generous timeouts: they must hold on a loaded 2-core machine.
func eventually(
    isolation: isolated (any Actor)? = #isolation,
    timeout: Duration = .seconds(10),
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

/// Real-time lateness that holds on a loaded, shared 2-core machine (precision is for benchmarks).
let generousLateness = Duration.milliseconds(50)

/// The suites that measure real time run one at a time, so that none is the others' load (the
/// 8-thread stress test would otherwise decide the lateness of every other test). Virtual-clock
/// suites stay parallel: they measure nothing.
@Suite("Real time", .serialized, .timeLimit(.minutes(2)))
enum RealTime {}
