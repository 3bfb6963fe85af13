import Dispatch
import Testing
import TimerKit
import TimerKitTesting

/// The virtual clock's own promises: exact, ordered, instant, never backwards.
@Suite("VirtualClock")
struct VirtualClockTests {
    final class Log: @unchecked Sendable {
        // Only touched from handlers, which run on the advancing thread.
        var entries: [String] = []
    }

    @Test("Timers fire in deadline order, ties in creation order")
    func deadlineThenCreationOrder() throws {
        let clock = VirtualClock()
        let log = Log()
        for (name, delay) in [("c", 20), ("a", 10), ("b", 10), ("d", 20), ("e", 5)] {
            try ScheduledTimer.once(at: .after(.milliseconds(delay)), clock: clock.clock) { _, _ in log.entries.append(name) }
        }
        clock.advance(by: .seconds(1))
        #expect(log.entries == ["e", "a", "b", "c", "d"])
    }

    @Test("Now is set to each deadline before its timer fires")
    func nowIsTheDeadline() throws {
        let clock = VirtualClock()
        let log = Log()
        for delay in [3, 7, 7, 12] {
            try ScheduledTimer.once(at: .after(.milliseconds(delay)), clock: clock.clock) { _, fire in
                log.entries.append("\(clock.now == fire.scheduledDeadline) \(clock.now.nanoseconds / 1_000_000)")
            }
        }
        #expect(clock.advance(by: .milliseconds(100)) == 4)
        #expect(log.entries == ["true 3", "true 7", "true 7", "true 12"])
        #expect(clock.now.nanoseconds == 100_000_000)
    }

    @Test("Time never moves backwards")
    func neverBackwards() throws {
        let clock = VirtualClock(start: .seconds(5))
        clock.advance(to: TimerInstant(kind: .virtual, nanoseconds: 1_000))
        #expect(clock.now.nanoseconds == 5_000_000_000)
        clock.advance(by: .seconds(-1))
        #expect(clock.now.nanoseconds == 5_000_000_000)
    }

    @Test("Advancing by zero fires what is already due")
    func advanceByZero() throws {
        let clock = VirtualClock()
        let log = Log()
        try ScheduledTimer.once(at: .now, clock: clock.clock) { _, _ in log.entries.append("now") }
        #expect(log.entries.isEmpty, "nothing fires until the test advances the clock")
        #expect(clock.advance(by: .zero) == 1)
        #expect(log.entries == ["now"])
    }

    @Test("A timer created by a handler fires in the same advance when its deadline falls inside it")
    func timersCreatedDuringAdvance() throws {
        let clock = VirtualClock()
        let log = Log()
        try ScheduledTimer.once(at: .after(.seconds(1)), clock: clock.clock) { _, _ in
            log.entries.append("outer")
            _ = try? ScheduledTimer.once(at: .after(.seconds(1)), clock: clock.clock) { _, _ in log.entries.append("inner") }
        }
        clock.advance(by: .seconds(2))
        #expect(log.entries == ["outer", "inner"])
        #expect(clock.now.nanoseconds == 2_000_000_000)
    }

    @Test("runUntilIdle fires every pending one-shot and stops at its limit for repeating timers")
    func runUntilIdle() throws {
        let clock = VirtualClock()
        let log = Log()
        for delay in [100, 50, 3_600_000] {
            try ScheduledTimer.once(at: .after(.milliseconds(delay)), clock: clock.clock) { _, _ in log.entries.append("\(delay)") }
        }
        #expect(clock.runUntilIdle() == 3)
        #expect(log.entries == ["50", "100", "3600000"])
        #expect(clock.now.nanoseconds == 3_600_000_000_000)
        #expect(clock.nextDeadline == nil)

        try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock) { _, _ in }
        #expect(clock.runUntilIdle(maxFires: 25) == 25)
        #expect(clock.pendingTimerCount == 1)
    }

    @Test("Queue-delivered handlers run on their queue before advance returns")
    func queueDeliveryIsSynchronous() throws {
        let clock = VirtualClock()
        let queue = DispatchQueue(label: "virtual-delivery")
        let log = Log()
        try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock, delivery: .queue(queue)) { _, fire in
            dispatchPrecondition(condition: .onQueue(queue))
            log.entries.append("\(fire.sequenceNumber)")
        }
        clock.advance(by: .seconds(3))
        #expect(log.entries == ["1", "2", "3"])
    }

    @Test("Separate virtual clocks are independent")
    func independentClocks() throws {
        let first = VirtualClock()
        let second = VirtualClock()
        let log = Log()
        try ScheduledTimer.once(at: .after(.seconds(1)), clock: first.clock) { _, _ in log.entries.append("first") }
        try ScheduledTimer.once(at: .after(.seconds(1)), clock: second.clock) { _, _ in log.entries.append("second") }
        second.advance(by: .seconds(1))
        #expect(log.entries == ["second"])
        #expect(first.pendingTimerCount == 1)
        #expect(first.clock != second.clock)
    }
}
