import AsyncAlgorithms
import Synchronization
import Testing
import TimerKit
import TimerKitTesting

/// swift-async-algorithms' time-based operators take any `Clock`: they run on TimerKit's clocks,
/// and on a virtual clock in tests.
@Suite("swift-async-algorithms on TimerKit's clocks")
struct AsyncAlgorithmsInteropTests {
    final class Seen: Sendable {
        private let values = Mutex<[String]>([])
        func append(_ value: String) { values.withLock { $0.append(value) } }
        var all: [String] { values.withLock { $0 } }
    }

    @Test("debounce(for:clock:) on a virtual clock: the latest element of a burst, once the clock has moved past its delay")
    func debounceOnVirtualClock() async throws {
        let virtual = VirtualClock()
        let (input, feed) = AsyncStream<String>.makeStream()
        let seen = Seen()
        let pulls = PullCounter()
        let consumer = Task(executorPreference: virtual.executor) {
            for await query in pulls.counting(input).debounce(for: .milliseconds(300), clock: virtual) {
                seen.append("\(query)@\(virtual.now)")
            }
            seen.append("end")
        }
        for query in ["s", "sw", "swift"] { feed.yield(query) }
        // The operator consumes its input and sleeps in unstructured tasks of its own, which do not
        // run on the clock's executor: an advance cannot see them, so wait for their effects. Its
        // input task asks for a fourth element only once it has stamped the third with its
        // deadline; advancing before that would give the burst's last element a later deadline.
        #expect(await until { pulls.count >= 4 && !virtual.sleepers.isEmpty })
        await virtual.advance(by: .milliseconds(299))
        #expect(seen.all.isEmpty)
        await virtual.advance(by: .milliseconds(1))
        #expect(await until { !seen.all.isEmpty })
        #expect(seen.all == ["swift@virtual+0.3s"])
        feed.finish()
        await consumer.value
        #expect(seen.all == ["swift@virtual+0.3s", "end"])
    }

    @Test("AsyncTimerSequence on TimerKit's continuous clock ticks, never before its deadlines")
    func timerSequenceOnTimerClock() async throws {
        let clock = TimerClock.continuous
        let start = clock.now
        var ticks: [TimerInstant] = []
        for await instant in AsyncTimerSequence(interval: .milliseconds(20), clock: clock) {
            ticks.append(instant)
            if ticks.count == 3 { break }
        }
        #expect(ticks.count == 3)
        #expect(ticks.allSatisfy { $0 >= start })
        #expect(clock.now - start >= .milliseconds(60))
    }

    /// Counts the calls of `next()` on the sequences it wraps.
    final class PullCounter: Sendable {
        private let pulls = Mutex(0)
        var count: Int { pulls.withLock { $0 } }

        func counting(_ base: AsyncStream<String>) -> Counted { Counted(base: base, counter: self) }

        struct Counted: AsyncSequence, Sendable {
            let base: AsyncStream<String>
            let counter: PullCounter

            func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), counter: counter) }

            struct Iterator: AsyncIteratorProtocol {
                var base: AsyncStream<String>.Iterator
                let counter: PullCounter

                mutating func next() async -> String? {
                    counter.pulls.withLock { $0 += 1 }
                    return await base.next()
                }
            }
        }
    }

    /// Waits for a condition that another task makes true, checking every millisecond; `false` if
    /// it is still false after a minute. (A liveness bound, not a timing one: under load the
    /// operator's tasks wait for a thread of the cooperative pool, which other suites share.)
    ///
    /// It sleeps between checks rather than yielding: `Task.yield()` puts the waiter straight back
    /// on the pool's queue, and two such waiters of a higher priority than the operator's own
    /// tasks kept both threads of a 2-core machine for the whole minute in CI — the tasks they
    /// waited for never ran.
    func until(_ condition: () -> Bool) async -> Bool {
        // Three minutes: under ThreadSanitizer, beside the torture and model suites' threads on
        // two cores, the tasks waited for have gone a whole minute without running.
        let end = ContinuousClock.now + .seconds(180)
        while !condition() {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}

extension AsyncAlgorithmsInteropTests {
    @Test("swift-async-algorithms' debounce, when its input ends during a burst, delivers the waiting element at once and ends — as TimerKit's debounced does")
    func debounceAtEndOfInput() async throws {
        let virtual = VirtualClock()
        let (input, feed) = AsyncStream<String>.makeStream()
        let seen = Seen()
        let consumer = Task(executorPreference: virtual.executor) {
            for await query in input.debounce(for: .seconds(60), clock: virtual) { seen.append("\(query)@\(virtual.now)") }
            seen.append("end@\(virtual.now)")
        }
        feed.yield("s")
        feed.yield("swift")
        #expect(await until { !virtual.sleepers.isEmpty })
        feed.finish()
        await consumer.value
        #expect(seen.all == ["swift@virtual+0s", "end@virtual+0s"])
    }
}
