import Foundation
import Testing
import TimerKit
import TimerKitTesting

/// Waits on `clock` through the `Clock` protocol alone, as code generic over clocks does.
func sleepGenerically<C: Clock>(_ clock: C, for duration: C.Duration) async throws {
    try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
}

@Suite("Clock conformance")
struct ClockConformanceTests {
    @Test("A sleep on a virtual clock is one pending entry, and ends when the clock is advanced to its deadline, not before")
    func virtualSleep() async throws {
        let virtual = VirtualClock()
        let clock = virtual.clock
        let sleeper = Task(executorPreference: virtual.executor) { try await Task.sleep(for: .seconds(5), clock: clock) }
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 1)
        #expect(virtual.nextDeadline == clock.now + .seconds(5))
        await virtual.advance(by: .seconds(4))
        #expect(virtual.pendingTimerCount == 1)
        await virtual.advance(by: .seconds(1))
        try await sleeper.value
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C8: cancelling a sleeping task ends its sleep at once with CancellationError and leaves nothing pending")
    func cancelDuringSleep() async throws {
        let virtual = VirtualClock()
        let clock = virtual.clock
        let sleeper = Task(executorPreference: virtual.executor) { try await clock.sleep(until: clock.now + .seconds(60)) }
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(virtual.pendingTimerCount == 0)
        // Advancing past the deadline later resumes nothing.
        #expect(await virtual.advance(by: .seconds(61)) == 0)
    }

    @Test("A task cancelled before it sleeps does not sleep, and schedules nothing")
    func cancelledBeforeSleep() async throws {
        let virtual = VirtualClock()
        let clock = virtual.clock
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: clock.now + .seconds(1))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C17: a deadline in the past ends the sleep at once; C1: an instant of another clock is refused")
    func pastAndForeignInstants() async throws {
        let virtual = VirtualClock(start: .seconds(10))
        try await virtual.clock.sleep(until: virtual.now - .seconds(5))
        await #expect(throws: TimerError.clockMismatch(expected: .virtual, got: .continuous)) {
            try await virtual.clock.sleep(until: TimerClock.continuous.now)
        }
        await #expect(throws: TimerError.negativeTolerance(.seconds(-1))) {
            try await virtual.clock.sleep(until: virtual.now + .seconds(1), tolerance: .seconds(-1))
        }
    }

    @Test("Code generic over Clock runs on a virtual clock: many sleepers resume in deadline order as it advances")
    func genericSleepers() async throws {
        let virtual = VirtualClock()
        let order = Recorder<Int>()
        let tasks = (1...5).reversed().map { seconds in
            Task(executorPreference: virtual.executor) {
                try await sleepGenerically(virtual.clock, for: .seconds(seconds))
                order.append(seconds)
            }
        }
        await virtual.advance(by: .zero)
        #expect(virtual.pendingTimerCount == 5)
        for second in 1...5 {
            await virtual.advance(by: .seconds(1))
            #expect(order.count == second)
        }
        for task in tasks { try await task.value }
        #expect(order.all == [1, 2, 3, 4, 5])
    }

    @Test("TimerInstant is an InstantProtocol whose arithmetic is its own")
    func instantArithmetic() {
        let start = TimerInstant(kind: .continuous, nanoseconds: 1_000)
        #expect(start.advanced(by: .nanoseconds(500)).duration(to: start) == .nanoseconds(-500))
        #expect(TimerClock.continuous.minimumResolution == .nanoseconds(1))
    }
}

extension RealTime {
    @Suite("Clock conformance in real time")
    struct ClockConformanceRealTimeTests {
        @Test("C8: a task sleeping on a clock that is shut down is resumed with clockShutDown, not lost")
        func shutDownResumesSleepers() async throws {
            let clock = TimerClock.dedicated(.continuous)
            let sleeper = Task { try await Task.sleep(for: .seconds(60), clock: clock) }
            #expect(await eventually { clock.pendingTimerCount == 1 })
            clock.shutdown()
            await #expect(throws: TimerError.clockShutDown) { try await sleeper.value }
        }

        @Test("C2: Task.sleep(for:clock:) on each system clock never ends before its deadline", arguments: [TimerClock.continuous, .suspending, .wall])
        func neverEarly(clock: TimerClock) async throws {
            for _ in 0..<5 {
                let start = clock.now
                try await Task.sleep(for: .milliseconds(20), clock: clock)
                #expect(clock.now - start >= .milliseconds(20))
            }
        }

        @Test("C2: ContinuousClock and SuspendingClock instants convert to the TimerKit instants they stand for, and back, never earlier")
        func interoperation() {
            let before = TimerClock.continuous.now
            let converted = TimerInstant(ContinuousClock.now + .seconds(1))
            let after = TimerClock.continuous.now
            // The conversion reads both clocks between the two control readings.
            #expect(converted >= before + .seconds(1) && converted <= after + .seconds(1))
            #expect(converted.clockKind == .continuous)

            let suspendingBefore = TimerClock.suspending.now
            let suspending = TimerInstant(SuspendingClock.now - .milliseconds(5))
            let suspendingAfter = TimerClock.suspending.now
            #expect(suspending >= suspendingBefore - .milliseconds(5) && suspending <= suspendingAfter - .milliseconds(5))

            let start = ContinuousClock.now
            let back: ContinuousClock.Instant? = ContinuousClock.Instant(TimerClock.continuous.now + .seconds(2))
            let end = ContinuousClock.now
            // Each conversion reads its source clock first, so a pause between its two readings
            // (a preempted thread) makes the result later, never earlier than the control.
            #expect(back != nil)
            if let back { #expect(back >= start + .seconds(2) && back <= end + .seconds(2)) }

            let suspendingStart = SuspendingClock.now
            let suspendingBack = SuspendingClock.Instant(TimerClock.suspending.now + .seconds(2))
            let suspendingEnd = SuspendingClock.now
            #expect(suspendingBack != nil)
            if let suspendingBack {
                #expect(suspendingBack >= suspendingStart + .seconds(2) && suspendingBack <= suspendingEnd + .seconds(2))
            }
            #expect(ContinuousClock.Instant(TimerClock.wall.now) == nil)
            #expect(SuspendingClock.Instant(TimerClock.continuous.now) == nil)
        }

        @Test("C3: sleepers whose tolerance windows overlap are resumed by shared wake-ups, none early")
        func sharedWakeUps() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let base = clock.now + .milliseconds(100)
            let before = clock.wakeUpCount
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for k in 0..<50 {
                    let deadline = base + .microseconds(200 * k)  // 50 deadlines within 10 ms
                    group.addTask {
                        try await clock.sleep(until: deadline, tolerance: .milliseconds(50))
                        return clock.now >= deadline
                    }
                }
                for try await onTime in group { #expect(onTime) }
            }
            // Every window contains the last deadline: a few wake-ups serve all fifty.
            #expect(clock.wakeUpCount - before <= 5)
        }
    }
}
