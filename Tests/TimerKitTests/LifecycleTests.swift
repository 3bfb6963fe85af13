import Dispatch
import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit

/// C6–C10 on the virtual clock.
@Suite("Lifecycle")
struct LifecycleTests {
    @Test("C6: a one-shot timer fires once and already reports invalid inside its handler")
    func oneShotFiresOnceAndIsInvalidInside() throws {
        let virtual = VirtualClock()
        let validInside = Recorder<Bool>()
        let timer = try ScheduledTimer.once(at: .after(.seconds(1)), clock: virtual.clock) { timer, _ in
            validInside.append(timer.isValid)
        }
        #expect(timer.isValid)
        virtual.advance(by: .seconds(10))
        #expect(validInside.all == [false])
        #expect(!timer.isValid)
        #expect(timer.nextDeadline == nil)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C7: fire() runs the handler now without moving a repeating timer's next deadline")
    func fireKeepsTheGrid() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, fire in fires.append(fire) }
        let next = timer.nextDeadline
        virtual.advance(by: .milliseconds(300))
        timer.fire()
        #expect(fires.count == 1)
        #expect(fires.all[0].isManual)
        #expect(fires.all[0].firedAt == virtual.now)
        #expect(timer.nextDeadline == next)
        virtual.advance(by: .milliseconds(700))
        #expect(fires.all.map(\.deadlineCount) == [0, 1])
        #expect(fires.all[1].scheduledDeadline == next)
    }

    @Test("C7: fire() on a one-shot timer fires it and invalidates it; on an invalid timer it does nothing")
    func fireOnOneShotAndInvalid() throws {
        let virtual = VirtualClock()
        let fires = Counter()
        let timer = try ScheduledTimer.once(at: .after(.seconds(5)), clock: virtual.clock) { _, _ in fires.increment() }
        timer.fire()
        #expect(fires.current == 1)
        #expect(!timer.isValid)
        timer.fire()
        virtual.advance(by: .seconds(10))
        #expect(fires.current == 1)
    }

    @Test(
        "C7: fire() with engine-thread delivery runs on the calling thread when no run is under way; during a run it returns at once and the running thread runs it next, with deadlineCount 0"
    )
    func whoRunsAManualFire() throws {
        let virtual = VirtualClock()
        let fires = Recorder<(count: Int, thread: UInt64)>()
        let inFirstRun = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, fire in
            fires.append((fire.deadlineCount, SystemClock.currentThreadID))
            if fires.count == 1 {
                inFirstRun.signal()
                release.wait()
            }
        }
        // First, a run under way on another thread: the advance's, held inside the handler.
        let advancer = DispatchQueue(label: "advancer")
        let advanced = DispatchSemaphore(value: 0)
        let advancerThread = Recorder<UInt64>()
        advancer.async {
            advancerThread.append(SystemClock.currentThreadID)
            virtual.advance(by: .seconds(1))
            advanced.signal()
        }
        inFirstRun.wait()
        #expect(timer.fire(), "a run was requested")
        #expect(fires.count == 1, "a run is under way: fire() returned without running the handler")
        release.signal()
        advanced.wait()
        #expect(fires.all.map(\.count) == [1, 0], "the running thread ran the requested fire right after, as a manual fire")
        #expect(fires.all.allSatisfy { $0.thread == advancerThread.all[0] })
        // Idle now: on the calling thread, before it returns.
        #expect(timer.fire())
        #expect(fires.all.map(\.count) == [1, 0, 0])
        #expect(fires.all[2].thread == SystemClock.currentThreadID)
        timer.invalidate()
        #expect(!timer.fire(), "an invalid timer: nothing requested")
        #expect(fires.count == 3)
    }

    @Test("C7: fire() on a one-shot that the engine has already taken for its deadline runs the handler once in all, never twice")
    func manualFireOnATakenOneShot() throws {
        let virtual = VirtualClock()
        let queue = DispatchQueue(label: "held")
        let hold = DispatchSemaphore(value: 0)
        let fires = Recorder<Int>()
        // The delivery queue is busy, so the engine's decided run waits in it: the moment a real
        // engine thread can be in between taking the timer and calling its handler.
        queue.async { hold.wait() }
        let timer = try ScheduledTimer.once(at: .after(.seconds(1)), clock: virtual.clock, delivery: .queue(queue)) { _, fire in
            fires.append(fire.deadlineCount)
        }
        try timer.reschedule(at: .after(.milliseconds(10)))
        // The advance waits for its queued deliveries, so it runs elsewhere; once the engine has
        // taken the timer out of its store, fire() comes.
        let advanced = DispatchSemaphore(value: 0)
        DispatchQueue(label: "advancer").async {
            virtual.advance(by: .seconds(1))
            advanced.signal()
        }
        for _ in 0..<10_000 where virtual.pendingTimerCount > 0 { Thread.sleep(forTimeInterval: 0.001) }
        #expect(virtual.pendingTimerCount == 0, "the engine took the timer")
        let requested = timer.fire()
        #expect(fires.count == 0, "nothing ran on the calling thread: a run was already decided")
        hold.signal()
        advanced.wait()
        queue.sync {}
        // Exactly one run: the deadline's, or the manual fire standing for it.
        #expect(fires.count == 1)
        #expect(fires.all == [requested ? 0 : 1])
        #expect(!timer.isValid)
    }

    @Test("C7: fire() delivers on the timer's delivery queue")
    func fireUsesTheDeliveryTarget() async throws {
        let queue = DispatchQueue(label: "fire-target")
        let onQueue = Recorder<Bool>()
        let timer = try ScheduledTimer.repeating(every: .seconds(3600), delivery: .queue(queue)) { _, _ in
            dispatchPrecondition(condition: .onQueue(queue))
            onQueue.append(true)
        }
        timer.fire()
        #expect(await eventually { onQueue.count == 1 })
        timer.invalidate()
    }

    @Test("C8: invalidate() is idempotent and stops every later fire")
    func invalidateIsIdempotent() throws {
        let virtual = VirtualClock()
        let fires = Counter()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, _ in fires.increment() }
        virtual.advance(by: .seconds(2))
        timer.invalidate()
        timer.invalidate()
        virtual.advance(by: .seconds(10))
        #expect(fires.current == 2)
        #expect(!timer.isValid)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C8: invalidate() inside the handler returns at once and ends the timer")
    func invalidateFromInsideTheHandler() throws {
        let virtual = VirtualClock()
        let fires = Counter()
        try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { timer, _ in
            if fires.increment() == 3 { timer.invalidate() }
        }
        virtual.advance(by: .seconds(10))
        #expect(fires.current == 3)
    }

    @Test("C8: after invalidate() the handler and everything it captured are released", .checksLeaks)
    func invalidateReleasesTheHandler() throws {
        final class Captured: Sendable {}
        let virtual = VirtualClock()
        let watchedCaptured: WatchedObject
        let timer: ScheduledTimer
        do {
            let captured = Captured()
            watchedCaptured = watchForLeaks(captured)
            timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, _ in _ = captured }
        }
        virtual.advance(by: .seconds(2))
        #expect(!watchedCaptured.isReleased)
        timer.invalidate()
        #expect(watchedCaptured.isReleased)
    }

    @Test("C8: a one-shot timer releases its handler after its fire", .checksLeaks)
    func oneShotReleasesItsHandler() throws {
        final class Captured: Sendable {}
        let virtual = VirtualClock()
        let watchedCaptured: WatchedObject
        let timer: ScheduledTimer
        do {
            let captured = Captured()
            watchedCaptured = watchForLeaks(captured)
            timer = try ScheduledTimer.once(at: .after(.seconds(1)), clock: virtual.clock) { _, _ in _ = captured }
        }
        virtual.advance(by: .seconds(1))
        #expect(watchedCaptured.isReleased)
        #expect(!timer.isValid)
    }

    @Test("C9: suspend and resume are idempotent and never counted")
    func suspendResumeAreNotCounted() throws {
        let virtual = VirtualClock()
        let fires = Counter()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, missedDeadlines: .skip) { _, _ in fires.increment() }
        timer.suspend()
        timer.suspend()
        #expect(timer.isSuspended)
        virtual.advance(by: .milliseconds(500))
        timer.resume()
        #expect(!timer.isSuspended)
        virtual.advance(by: .milliseconds(500))
        #expect(fires.current == 1, "two suspends and one resume leave the timer running")
        timer.resume()
        virtual.advance(by: .seconds(1))
        #expect(fires.current == 2)
    }

    @Test("C9: a suspended timer keeps its grid and does not fire")
    func suspendedTimerKeepsItsGrid() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, fire in fires.append(fire) }
        let start = virtual.now
        timer.suspend()
        virtual.advance(by: .milliseconds(900))
        #expect(virtual.pendingTimerCount == 0)
        timer.resume()
        virtual.advance(by: .milliseconds(100))
        #expect(fires.all.map(\.scheduledDeadline) == [start + .seconds(1)])
        #expect(fires.all.map(\.deadlineCount) == [1])
    }

    @Test("C9: timers can be invalidated and released in every state without a crash")
    func releaseInEveryState() throws {
        let virtual = VirtualClock()
        // Never started (suspended from creation is not public; suspend at once), suspended, fired.
        for state in 0..<4 {
            var timer: ScheduledTimer? = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { timer, _ in
                if state == 3 { timer.invalidate() }
            }
            switch state {
            case 0: break
            case 1: timer?.suspend()
            case 2:
                timer?.suspend()
                timer?.invalidate()
            default: virtual.advance(by: .seconds(1))
            }
            timer = nil
            virtual.advance(by: .seconds(1))
        }
        #expect(virtual.pendingTimerCount == 1, "only the never-suspended, never-invalidated timer is left")
    }

    @Test("C10: reschedule moves the grid to a new first deadline and interval")
    func rescheduleRestartsTheGrid() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, fire in fires.append(fire) }
        let start = virtual.now
        virtual.advance(by: .milliseconds(1_500))
        try timer.reschedule(at: .after(.milliseconds(200)), every: .milliseconds(300))
        #expect(timer.nextDeadline == start + .milliseconds(1_700))
        #expect(timer.interval == .milliseconds(300))
        virtual.advance(to: start + .milliseconds(2_300))
        #expect(
            fires.all.map(\.scheduledDeadline) == [
                start + .seconds(1), start + .milliseconds(1_700), start + .milliseconds(2_000), start + .milliseconds(2_300)
            ])
    }

    @Test("C10: reschedule keeps the interval when none is given, and refuses a timer that is no longer valid")
    func rescheduleKeepsIntervalAndNeedsAValidTimer() throws {
        let virtual = VirtualClock()
        let fires = Counter()
        let repeating = try ScheduledTimer.repeating(every: .seconds(2), clock: virtual.clock) { _, _ in fires.increment() }
        try repeating.reschedule(at: .after(.seconds(1)))
        #expect(repeating.interval == .seconds(2))
        virtual.advance(by: .seconds(3))
        #expect(fires.current == 2)

        let oneShot = try ScheduledTimer.once(at: .after(.seconds(1)), clock: virtual.clock) { _, _ in }
        virtual.advance(by: .seconds(1))
        #expect(throws: TimerError.timerInvalidated) { try oneShot.reschedule(at: .after(.seconds(1))) }
    }

    @Test("C10: a suspended timer stays suspended when rescheduled")
    func rescheduleWhileSuspended() throws {
        let virtual = VirtualClock()
        let fires = Counter()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, _ in fires.increment() }
        timer.suspend()
        try timer.reschedule(at: .after(.seconds(5)))
        virtual.advance(by: .seconds(10))
        #expect(fires.current == 0)
        #expect(timer.isSuspended)
    }
}
