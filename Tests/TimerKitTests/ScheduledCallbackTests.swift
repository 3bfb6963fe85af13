import Dispatch
import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit

/// The object-free one-shot: `TimerClock.schedule(at:tolerance:delivery:_:)` and `ScheduledCallback`.
@Suite("Scheduled callbacks")
struct ScheduledCallbackTests {
    /// Something a closure captures, to see when the closure is released.
    final class Captured: Sendable {}

    @Test("C1, C2, C6: a callback runs once, at its deadline on its own clock and never before, and is no longer pending inside its closure")
    func runsOnceAtItsDeadline() throws {
        let clock = VirtualClock()
        let runs = Recorder<(Int64, Bool)>()
        let handle = Locked<ScheduledCallback?>(nil)
        let callback = try clock.clock.schedule(at: .after(.milliseconds(30))) {
            runs.append((clock.now.nanoseconds, handle.withLock { $0 }?.isPending ?? true))
        }
        handle.withLock { $0 = callback }
        #expect(callback.isPending)
        #expect(callback.clock == clock.clock)
        clock.advance(by: .milliseconds(29))
        #expect(runs.count == 0, "not before its deadline")
        clock.advance(by: .milliseconds(1))
        clock.advance(by: .seconds(5))
        #expect(runs.all.map(\.0) == [30_000_000], "once, with the clock at its deadline")
        #expect(runs.all.map(\.1) == [false])
        #expect(!callback.isPending)
        #expect(clock.pendingTimerCount == 0)
    }

    @Test("C8: cancel() stops a pending callback, says so once, and releases what its closure captured before it returns", .checksLeaks)
    func cancelReleasesTheClosure() throws {
        let clock = VirtualClock()
        let ran = Counter()
        var captured: Captured? = Captured()
        let watched: WatchedObject
        watched = watchForLeaks(captured)
        let callback = try clock.clock.schedule(at: .after(.seconds(1))) { [captured] in
            _ = captured
            ran.increment()
        }
        captured = nil
        #expect(!watched.isReleased, "the engine holds the closure while it is pending")
        #expect(callback.cancel())
        #expect(watched.isReleased, "released by cancel()")
        #expect(!callback.cancel(), "idempotent: a second cancel() reports nothing to cancel")
        #expect(!callback.isPending)
        clock.advance(by: .seconds(2))
        #expect(ran.current == 0)
    }

    @Test("C8: cancel() after the callback ran returns false, and the closure is released once it has run", .checksLeaks)
    func cancelAfterRun() throws {
        let clock = VirtualClock()
        var captured: Captured? = Captured()
        let watched: WatchedObject
        watched = watchForLeaks(captured)
        let callback = try clock.clock.schedule(at: .now) { [captured] in _ = captured }
        captured = nil
        clock.advance(by: .zero)
        #expect(watched.isReleased)
        #expect(!callback.cancel())
    }

    @Test("C12: dropping the handle does not cancel the callback")
    func droppedHandleStillRuns() throws {
        let clock = VirtualClock()
        let ran = Counter()
        for _ in 0..<3 {
            try clock.clock.schedule(at: .after(.milliseconds(10))) { ran.increment() }
        }
        clock.advance(by: .milliseconds(10))
        #expect(ran.current == 3)
    }

    @Test("C16: a stale handle never cancels a later callback that reuses its entry")
    func staleHandleIsHarmless() throws {
        let clock = VirtualClock()
        let ran = Counter()
        let first = try clock.clock.schedule(at: .after(.seconds(1))) {}
        #expect(first.cancel())
        let second = try clock.clock.schedule(at: .after(.seconds(1))) { ran.increment() }
        #expect(second.index == first.index, "the freed entry was reused")
        #expect(!first.cancel())
        #expect(!first.isPending && second.isPending)
        #expect(first != second)
        clock.advance(by: .seconds(1))
        #expect(ran.current == 1)
    }

    @Test("C15: a callback delivered to a queue runs on that queue")
    func runsOnItsQueue() throws {
        let clock = VirtualClock()
        let queue = DispatchQueue(label: "callback.queue")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let seen = Recorder<Int?>()
        try clock.clock.schedule(at: .after(.milliseconds(5)), delivery: .queue(queue)) {
            seen.append(DispatchQueue.getSpecific(key: key))
        }
        clock.advance(by: .milliseconds(5))
        #expect(seen.all == [7])
    }

    @Test("C2, C16: callbacks and timers on one clock fire together in (deadline, creation) order")
    func interleavesWithTimers() throws {
        let clock = VirtualClock()
        let order = Recorder<String>()
        try clock.clock.schedule(at: .after(.milliseconds(20))) { order.append("callback 20") }
        try ScheduledTimer.once(at: .after(.milliseconds(10)), clock: clock.clock) { _, _ in order.append("timer 10") }
        try ScheduledTimer.once(at: .after(.milliseconds(20)), clock: clock.clock) { _, _ in order.append("timer 20") }
        try clock.clock.schedule(at: .after(.milliseconds(10))) { order.append("callback 10") }
        clock.advance(by: .milliseconds(30))
        #expect(order.all == ["timer 10", "callback 10", "callback 20", "timer 20"])
    }

    @Test("C10: reschedule(at:) moves a waiting callback in place — later or sooner, the same handle — and it runs once, at its new deadline only")
    func rescheduleMovesInPlace() throws {
        let clock = VirtualClock()
        let start = clock.now
        let runs = Recorder<TimerInstant>()
        let callback = try clock.clock.schedule(at: .after(.seconds(10))) { runs.append(clock.now) }
        #expect(try callback.reschedule(at: .after(.seconds(30))))
        clock.advance(by: .seconds(20))
        #expect(runs.all.isEmpty, "not at the old deadline")
        #expect(callback.isPending)
        #expect(try callback.reschedule(at: .at(start + .seconds(25))), "sooner")
        clock.advance(by: .seconds(20))
        #expect(runs.all == [start + .seconds(25)])
        #expect(clock.pendingTimerCount == 0)
    }

    @Test("C10, C8: reschedule(at:) returns false once the callback ran or was cancelled, and never brings it back")
    func rescheduleAfterRunOrCancel() throws {
        let clock = VirtualClock()
        let ran = Counter()
        let fired = try clock.clock.schedule(at: .after(.seconds(1))) { ran.increment() }
        clock.advance(by: .seconds(1))
        #expect(try !fired.reschedule(at: .after(.seconds(1))))
        let cancelled = try clock.clock.schedule(at: .after(.seconds(1))) { ran.increment() }
        cancelled.cancel()
        #expect(try !cancelled.reschedule(at: .after(.seconds(1))))
        clock.advance(by: .seconds(5))
        #expect(ran.current == 1)
        #expect(clock.pendingTimerCount == 0)
    }

    @Test("C2, C10: a rescheduled callback keeps its creation order among callbacks due at the same instant")
    func rescheduleKeepsCreationOrder() throws {
        let clock = VirtualClock()
        let order = Recorder<String>()
        let first = try clock.clock.schedule(at: .after(.seconds(5))) { order.append("first") }
        try clock.clock.schedule(at: .after(.seconds(2))) { order.append("second") }
        #expect(try first.reschedule(at: .after(.seconds(2))))
        clock.advance(by: .seconds(3))
        #expect(order.all == ["first", "second"])
    }

    @Test("C17: rescheduling to a bad deadline throws a clear error and leaves the callback where it was")
    func rescheduleBadInput() throws {
        let clock = VirtualClock()
        let ran = Counter()
        let callback = try clock.clock.schedule(at: .after(.seconds(1))) { ran.increment() }
        #expect(throws: TimerError.durationOverflow) { try callback.reschedule(at: .after(.seconds(Int64.max))) }
        #expect(throws: TimerError.clockMismatch(expected: .virtual, got: .wall)) { try callback.reschedule(at: .at(TimerClock.wall.now)) }
        clock.advance(by: .seconds(1))
        #expect(ran.current == 1)
    }

    @Test("C17: bad input throws a clear error and schedules nothing; a start in the past runs at once")
    func badInput() throws {
        let clock = VirtualClock(start: .seconds(10))
        #expect(throws: TimerError.negativeTolerance(.milliseconds(-1))) {
            try clock.clock.schedule(at: .now, tolerance: .milliseconds(-1)) {}
        }
        #expect(throws: TimerError.durationOverflow) {
            try clock.clock.schedule(at: .after(.seconds(Int64.max))) {}
        }
        #expect(throws: TimerError.clockMismatch(expected: .virtual, got: .wall)) {
            try clock.clock.schedule(at: .at(TimerClock.wall.now)) {}
        }
        #expect(clock.pendingTimerCount == 0)
        let ran = Counter()
        try clock.clock.schedule(at: .after(.seconds(-5))) { ran.increment() }
        clock.advance(by: .zero)
        #expect(ran.current == 1)
    }
}

/// Callbacks in real time: threads, wake-ups, shutdown.
extension RealTime {
    @Suite("Scheduled callbacks in real time")
    struct ScheduledCallbackRealTimeTests {
        @Test("C2, C15: a callback on a system clock runs on the engine thread, not before its deadline")
        func runsOnTheEngineThread() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let runs = Recorder<(lateness: Duration, thread: UInt64, onDriver: Bool)>()
            let timerRuns = Recorder<(thread: UInt64, onDriver: Bool)>()
            let deadline = clock.now.advanced(by: .milliseconds(20))
            try clock.schedule(at: .at(deadline)) {
                runs.append((clock.now - deadline, SystemClock.currentThreadID, clock.engine.isOnDriver))
            }
            // A timer delivered on the engine thread, to compare threads with.
            try ScheduledTimer.once(at: .at(deadline.advanced(by: .milliseconds(5))), clock: clock) { _, _ in
                timerRuns.append((SystemClock.currentThreadID, clock.engine.isOnDriver))
            }
            #expect(await eventually { runs.count == 1 && timerRuns.count == 1 })
            let run = try #require(runs.all.first)
            let timerRun = try #require(timerRuns.all.first)
            #expect(run.lateness >= .zero, "C2")
            #expect(run.onDriver && timerRun.onDriver, "on the clock's engine driver")
            if let driverThread = clock.engine.driverThread {
                // The kernel-timer driver is one thread across wake-ups; a dispatch queue is not.
                #expect(run.thread == driverThread && timerRun.thread == driverThread)
            }
            #expect(run.thread != SystemClock.currentThreadID)
        }

        @Test("C2, C10: on a system clock, a callback moved sooner runs at its new deadline — the engine is armed for it — and never before it")
        func rescheduleSoonerArmsTheEngine() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let runs = Recorder<Duration>()
            let callback = try clock.schedule(at: .after(.seconds(3_600))) {}
            let deadline = clock.now.advanced(by: .milliseconds(20))
            let moved = try clock.schedule(at: .after(.seconds(3_600))) { runs.append(clock.now - deadline) }
            #expect(try moved.reschedule(at: .at(deadline)))
            #expect(await eventually { runs.count == 1 }, "the engine, armed for an hour, woke for the new deadline")
            #expect(try #require(runs.all.first) >= .zero, "C2")
            #expect(callback.isPending)
            callback.cancel()
        }

        @Test("C3: callbacks whose tolerance windows overlap are served by one wake-up")
        func toleranceSharesWakeUps() async throws {
            let clock = TimerClock.dedicated(.suspending)
            defer { clock.shutdown() }
            let ran = Counter()
            let before = clock.wakeUpCount
            let start = clock.now
            for index in 0..<50 {
                try clock.schedule(at: .after(.milliseconds(20 + index)), tolerance: .milliseconds(200)) { ran.increment() }
            }
            // Stored before the first deadline, they were all there for the first wake-up.
            let allStored = clock.now < start + .milliseconds(20)
            #expect(await eventually { ran.current == 50 })
            #expect(!allStored || clock.wakeUpCount - before <= 2)
        }

        @Test("C8, C13: cancelling one callback from eight threads at once cancels it exactly once")
        func concurrentCancel() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let ran = Counter()
            let cancelled = Counter()
            for _ in 0..<200 {
                let callback = try clock.schedule(at: .after(.seconds(60))) { ran.increment() }
                DispatchQueue.concurrentPerform(iterations: 8) { _ in
                    if callback.cancel() { cancelled.increment() }
                }
            }
            #expect(cancelled.current == 200)
            #expect(ran.current == 0)
            #expect(clock.pendingTimerCount == 0)
        }

        @Test("C16: shutting a clock down releases its pending callbacks without running them and refuses new ones", .checksLeaks)
        func shutdownReleasesCallbacks() throws {
            let clock = TimerClock.dedicated(.continuous)
            let ran = Counter()
            var captured: ScheduledCallbackTests.Captured? = ScheduledCallbackTests.Captured()
            let watched: WatchedObject
            watched = watchForLeaks(captured)
            let callback = try clock.schedule(at: .after(.seconds(60))) { [captured] in
                _ = captured
                ran.increment()
            }
            captured = nil
            clock.shutdown()
            #expect(watched.isReleased)
            #expect(!callback.isPending && !callback.cancel())
            #expect(throws: TimerError.clockShutDown) { try clock.schedule(at: .now) {} }
            #expect(ran.current == 0)
        }
    }
}
