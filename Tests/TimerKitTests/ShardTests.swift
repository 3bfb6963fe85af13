import Foundation
import Testing

@testable import TimerKit

/// Runs `body` on a new thread of its own and returns once it has returned (never blocking a
/// thread of the cooperative pool).
func onNewThread(_ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread {
            body()
            continuation.resume()
        }.start()
    }
}

extension RealTime {
    /// A system clock keeps its timers and callbacks in per-core shards, each thread in its own
    /// (issues 11 and 21); what a timer or callback promises must not depend on which shard holds it.
    @Suite("Shards")
    struct ShardTests {
        @Test("C13: a callback scheduled on one thread is cancelled from another, and never runs")
        func cancelFromAnotherThread() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let ran = Flag()
            let handle = Recorder<ScheduledCallback>()
            // Due in an hour: the cancel comes first whatever the load, and takes the callback out of
            // the shard of the thread that scheduled it.
            await onNewThread {
                handle.append(try! clock.schedule(at: .after(.seconds(3_600))) { ran.set() })
            }
            let callback = try #require(handle.all.first)
            #expect(clock.pendingTimerCount == 1)
            let cancelled = Recorder<Bool>()
            await onNewThread { cancelled.append(callback.cancel()) }
            #expect(cancelled.all == [true])
            #expect(!callback.isPending)
            #expect(clock.pendingTimerCount == 0)
            #expect(!ran.isSet)
        }

        @Test("C16: callbacks scheduled from several threads are all counted, all fire, and none is early")
        func manyThreads() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let fired = Counter()
            let early = Counter()
            let deadline = clock.now + .seconds(1)
            for _ in 0..<4 {
                await onNewThread {
                    for _ in 0..<250 {
                        try! clock.schedule(at: .at(deadline)) {
                            if clock.now < deadline { _ = early.increment() }
                            _ = fired.increment()
                        }
                    }
                }
            }
            // Nothing leaves its shard before the deadline (never early): read before it, the count
            // is all of them. A machine too loaded to schedule them within the second only counts
            // the fires below.
            let pending = clock.pendingTimerCount
            if clock.now < deadline { #expect(pending == 1_000) }
            #expect(await eventually { fired.current == 1_000 })
            #expect(early.current == 0)
            #expect(clock.pendingTimerCount == 0)
        }

        @Test("C4: callbacks of two threads that come due at one wake-up run in deadline order")
        func mergedInDeadlineOrder() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let order = Recorder<Int>()
            let base = clock.now + .milliseconds(300)
            // Thread A holds the odd deadlines, thread B the even ones; a tolerance that covers them
            // all lets the engine serve them with one wake-up, so they come out of two shards at once.
            for parity in 0..<2 {
                await onNewThread {
                    for step in stride(from: parity, to: 8, by: 2) {
                        try! clock.schedule(at: .at(base + .milliseconds(step)), tolerance: .milliseconds(40)) { order.append(step) }
                    }
                }
            }
            // Nothing fires before its deadline: stored before the first one, they were all there
            // for that wake-up. (A machine that took longer to start the threads proves nothing here.)
            let allStored = clock.now < base
            #expect(await eventually { order.count == 8 })
            #expect(!allStored || order.all == Array(0..<8), "\(order.all)")
        }

        @Test("C13, C8: a timer made on one thread is suspended, resumed, rescheduled and invalidated from others; it fires only while allowed")
        func timerControlledFromOtherThreads() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let fires = Counter()
            let made = Recorder<ScheduledTimer>()
            await onNewThread {
                made.append(try! ScheduledTimer.repeating(every: .milliseconds(5), clock: clock) { _, _ in _ = fires.increment() })
            }
            let timer = try #require(made.all.first)
            await onNewThread { timer.suspend() }
            let whileSuspended = fires.current
            try await Task.sleep(for: .milliseconds(40))
            #expect(fires.current <= whileSuspended + 1, "at most a run already under way when suspend() returned")
            await onNewThread { timer.resume() }
            #expect(await eventually { fires.current >= whileSuspended + 3 })
            await onNewThread { try! timer.reschedule(at: .after(.seconds(3_600))) }
            #expect(timer.nextDeadline! > clock.now + .seconds(3_000))
            await onNewThread { timer.invalidate() }
            await timer.invalidateAndWait()  // idempotent: waits for a run that began before, if any
            let final = fires.current
            try await Task.sleep(for: .milliseconds(30))
            #expect(fires.current == final, "C8: no run begins after invalidate() returned")
            #expect(clock.pendingTimerCount == 0)
        }

        @Test("C4: timers and callbacks of four threads that come due at one wake-up run in deadline order")
        func timersMergedInDeadlineOrder() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let order = Recorder<Int>()
            let made = Recorder<ScheduledTimer>()
            let base = clock.now + .milliseconds(300)
            // Thread t holds deadlines t, t + 4, …: one-shot timers on two threads, callbacks on the
            // other two; a tolerance that covers them all lets one wake-up take them from four shards
            // (the 300 ms lead leaves a loaded machine time to start the four threads first).
            for thread in 0..<4 {
                await onNewThread {
                    for step in stride(from: thread, to: 16, by: 4) {
                        let deadline = base + .milliseconds(step)
                        if thread < 2 {
                            made.append(try! ScheduledTimer.once(at: .at(deadline), tolerance: .milliseconds(100), clock: clock) { _, _ in order.append(step) })
                        } else {
                            try! clock.schedule(at: .at(deadline), tolerance: .milliseconds(100)) { order.append(step) }
                        }
                    }
                }
            }
            // Nothing fires before its deadline: stored before the first one, they were all there
            // for that wake-up. (A machine that took longer to start the threads proves nothing here.)
            let allStored = clock.now < base
            #expect(await eventually { order.count == 16 })
            #expect(!allStored || order.all == Array(0..<16), "\(order.all)")
        }

        @Test("C8, C16: shutting a clock down invalidates the timers of every shard, suspended ones too, and empties every store")
        func shutdownReachesEveryShard() async throws {
            let clock = TimerClock.dedicated(.continuous)
            let made = Recorder<ScheduledTimer>()
            for thread in 0..<4 {
                await onNewThread {
                    for index in 0..<25 {
                        let timer = try! ScheduledTimer.repeating(every: .seconds(60), clock: clock) { _, _ in }
                        if (index + thread).isMultiple(of: 3) { timer.suspend() }
                        made.append(timer)
                    }
                }
            }
            let timers = made.all
            #expect(Set(timers.map(\.shard)).count > 1, "each thread's timers live in its own shard")
            #expect(clock.pendingTimerCount == timers.filter { !$0.isSuspended }.count)
            clock.shutdown()
            #expect(timers.allSatisfy { !$0.isValid })
            #expect(clock.pendingTimerCount == 0)
            #expect(throws: TimerError.clockShutDown) { try ScheduledTimer.once(at: .now, clock: clock) { _, _ in } }
        }

        @Test(
            "C12: a dedicated clock's engine lives while any of its timers does, in whichever shard they live, and goes after the last",
            .checksLeaks)
        func engineLivesWithItsTimers() async throws {
            let watched: WatchedObject
            var timers: [ScheduledTimer] = []
            do {
                // A driver that never wakes and holds nothing: only the timers can keep the engine.
                let engine = TimerEngine(kind: .continuous, isShared: false, driver: IdleDriver())
                watched = watchForLeaks(engine)
                let clock = TimerClock(engine: engine)
                timers.append(try ScheduledTimer.repeating(every: .seconds(60), clock: clock) { _, _ in })
                // New threads take new slots: within a few, one lands in another shard.
                for _ in 0..<16 where Set(timers.map(\.shard)).count < 2 {
                    let made = Recorder<ScheduledTimer>()
                    await onNewThread { made.append(try! ScheduledTimer.once(at: .after(.seconds(60)), clock: clock) { _, _ in }) }
                    timers += made.all
                }
                for timer in timers { timer.invalidate() }
            }
            #expect(Set(timers.map(\.shard)).count == 2)
            try await Task.sleep(for: .milliseconds(50))  // the threads end, and with them their hold on the clock
            while timers.count > 1 {
                timers.removeFirst()
                #expect(!watched.isReleased, "\(timers.count) timers keep it")
            }
            #expect(timers[0].nextDeadline == nil, "the engine is still there to ask")
            timers.removeAll()
            // The threads that made timers let go of the clock when they end, just after their work.
            #expect(await eventually { watched.isReleased }, "the last timer let it go")
        }
    }

    /// An engine driver that never wakes its engine and holds nothing.
    final class IdleDriver: EngineDriver, @unchecked Sendable {
        func start(serving engine: TimerEngine) {}
        func arm(at deadline: Int64) {}
        var isCurrent: Bool { false }
    }
}
