import Dispatch
import Foundation
import Testing

@testable import TimerKit

/// C8 against every interleaving: once `invalidate()` or `cancel()` has returned, no run begins;
/// `invalidateAndWait()` and `cancelAndWait()` also wait for the run under way.
extension RealTime {
    @Suite("Invalidation races")
    struct InvalidationRaceTests {
        @Test("C8: while three threads call fire() in a loop, no run begins that the engine decided on after invalidate() returned on a fourth")
        func noRunBeginsAfterInvalidateUnderAFireLoop() throws {
            // A run is counted (its sequence number given) when the engine decides on it, under the
            // timer's lock; invalidate() uncounts a decided run that has not begun, so the fire count
            // read once it returns is final (C8). Every run that enters the handler — even one whose
            // entry comes after invalidate() returned, preempted between its atomic begin and the
            // call, which C8 allows — must then be one of those counted runs: its sequence number is
            // at most the final count, and the entries add up to it exactly. A run decided after
            // invalidate() returned, or a stopped run that began anyway, breaks one of the two.
            let tries = 300
            var runs = 0
            var mismatches: [String] = []
            for attempt in 0..<tries {
                let entries = Counter()
                let highest = Locked(0)
                let timer = try ScheduledTimer.repeating(every: .seconds(3_600)) { _, fire in
                    entries.increment()
                    highest.withLock { $0 = max($0, fire.sequenceNumber) }
                }
                let stop = Flag()
                let done = DispatchGroup()
                for _ in 0..<3 {
                    done.enter()
                    Thread {
                        while !stop.isSet { timer.fire() }
                        done.leave()
                    }.start()
                }
                // Invalidate while runs are being decided and begun on the other threads.
                while timer.fireCount < 3 {}
                timer.invalidate()
                let final = timer.fireCount
                stop.set()
                done.wait()
                // Each fire() delivers on its own thread: every run it began has returned by now.
                let (entered, top) = (entries.current, highest.withLock { $0 })
                if entered != final || top > final || timer.fireCount != final {
                    mismatches.append("try \(attempt): final count \(final), \(entered) entries, highest sequence \(top), count now \(timer.fireCount)")
                }
                runs += entered
            }
            #expect(runs >= 3 * tries)
            #expect(mismatches.isEmpty, "runs that began after invalidate() returned: \(mismatches.prefix(5))")
        }

        /// Decides a run requested by `fire()` with the engine's own steps — the machine's transition,
        /// the store action, the delivery's decision under the lock — and stops there: the run is
        /// decided but has not begun.
        func decideManualRun(_ timer: ScheduledTimer) -> TimerEngine.DeliveryStep {
            timer.withShard { _, state in
                let (accepted, action) = timer.machine.requestManualFire(isShutDown: state.isShutDown)
                let holdsDelivery = timer.engine.carryOut(action, for: timer, &state)
                #expect(accepted && holdsDelivery)
                return timer.engine.nextDeliveryStep(timer, afterRuns: 0, &state)
            }
        }

        @Test("C8: invalidate() stops a run that the engine decided on but whose handler has not been called")
        func invalidateStopsADecidedRun() throws {
            let runs = Counter()
            let timer = try ScheduledTimer.repeating(every: .seconds(3_600)) { _, _ in runs.increment() }
            // Decide a run as a delivery does, under its shard's lock, then invalidate before it begins.
            let step = decideManualRun(timer)
            guard case .run = step else {
                Issue.record("expected a run, got \(step)")
                return
            }
            #expect(timer.fireCount == 1)
            timer.invalidate()
            let began = timer.runGate.begin()
            #expect(!began, "the decided run cannot begin once invalidate() has returned")
            timer.withShard { _, _ in timer.runGate.abandon() }
            #expect(timer.fireCount == 0, "a run that never began is not counted")
            #expect(runs.current == 0)
        }

        @Test("C8, C6: invalidate() stops a one-shot's final run that was decided but has not begun, although the one-shot already reads invalid")
        func invalidateStopsADecidedFinalRun() throws {
            let timer = try ScheduledTimer.once(at: .after(.seconds(3_600))) { _, _ in }
            let step = decideManualRun(timer)
            guard case .runFinal = step else {
                Issue.record("expected the final run, got \(step)")
                return
            }
            #expect(!timer.isValid, "C6: invalid from the moment its fire was decided")
            timer.invalidate()
            let finalBegan = timer.runGate.begin()
            #expect(!finalBegan)
            // Without invalidate(), the decided run begins.
            let other = try ScheduledTimer.once(at: .after(.seconds(3_600))) { _, _ in }
            _ = decideManualRun(other)
            let otherBegan = other.runGate.begin()
            #expect(otherBegan)
            other.endRun()
        }

        @Test(
            "C8: a callback whose cancel() returned false had begun its run, and has run once when cancelAndWait() returns; one whose cancel() returned true never runs"
        )
        func cancelRacesTheEngineThread() async throws {
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let tries = 400
            let cancelled = Counter()
            var wrong: [String] = []
            for index in 0..<tries {
                let ran = Counter()
                let deadline = clock.now + .microseconds(Int64(index % 40) * 10)
                let callback = try clock.schedule(at: .at(deadline)) { ran.increment() }
                // Cancel around the deadline, when the engine thread takes the callback out.
                while clock.now < deadline {}
                let stopped = callback.cancel()
                if stopped { cancelled.increment() }
                // Waits for a run that began (C8); a cancelled one has nothing to wait for.
                _ = await callback.cancelAndWait()
                // Exact whatever the load: false means the run had begun, so it has returned by now;
                // true means it never begins.
                let expected = stopped ? 0 : 1
                if ran.current != expected { wrong.append("try \(index): cancel() said \(stopped), the closure ran \(ran.current) time(s)") }
            }
            #expect(wrong.isEmpty, "\(wrong.count) of \(tries): \(wrong.prefix(5))")
            #expect(cancelled.current <= tries)
        }

        @Test("C8: cancel() stops a due callback that waits for its busy queue; it never runs")
        func cancelStopsACallbackWaitingForItsQueue() async throws {
            let queue = DispatchQueue(label: "busy")
            let release = DispatchSemaphore(value: 0)
            let blocking = Flag()
            queue.async {
                blocking.set()
                release.wait()
            }
            #expect(await eventually { blocking.isSet })
            let clock = TimerClock.dedicated(.continuous)
            defer { clock.shutdown() }
            let ran = Counter()
            let callback = try clock.schedule(at: .now, delivery: .queue(queue)) { ran.increment() }
            // Due at once: the engine takes it out of its store and hands it to the busy queue.
            #expect(await eventually { clock.pendingTimerCount == 0 })
            #expect(callback.isPending, "due and waiting for its queue, its run has not begun")
            #expect(callback.cancel())
            #expect(!callback.isPending)
            release.signal()
            queue.sync {}
            #expect(ran.current == 0)
            #expect(!callback.cancel(), "cancelled once")
        }

        @Test("C8: invalidateAndWait() returns only once the run under way has returned, and at once when none is")
        func invalidateAndWaitWaitsForTheRunUnderWay() async throws {
            let started = Counter()
            let finished = Counter()
            let release = DispatchSemaphore(value: 0)
            // A handler that blocks belongs on a queue of its own (see DeliveryTests).
            let timer = try ScheduledTimer.repeating(every: .milliseconds(5), delivery: .queue(DispatchQueue(label: "blocking"))) { _, _ in
                started.increment()
                release.wait()
                finished.increment()
            }
            #expect(await eventually { started.current == 1 })
            let returned = Flag()
            let waiter = Task { () -> Int in
                await timer.invalidateAndWait()
                returned.set()
                return finished.current
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(!returned.isSet, "the run under way has not returned")
            #expect(!timer.isValid)
            release.signal()
            #expect(await waiter.value == 1, "it returned after the run had finished")
            await timer.invalidateAndWait()
            #expect(started.current == 1)
        }

        @Test("C8: cancelAndWait() cancels a callback whose run has not begun, and waits for one under way")
        func cancelAndWaitWaitsForTheRunUnderWay() async throws {
            let queue = DispatchQueue(label: "blocking")
            let started = Counter()
            let finished = Counter()
            let release = DispatchSemaphore(value: 0)
            let running = try TimerClock.continuous.schedule(at: .now, delivery: .queue(queue)) {
                started.increment()
                release.wait()
                finished.increment()
            }
            let behind = try TimerClock.continuous.schedule(at: .now, delivery: .queue(queue)) { started.increment() }
            #expect(await eventually { started.current == 1 })
            #expect(await behind.cancelAndWait(), "due but not begun: cancelled at once")
            let returned = Flag()
            let waiter = Task { () -> (Bool, Int) in
                let cancelled = await running.cancelAndWait()
                returned.set()
                return (cancelled, finished.current)
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(!returned.isSet, "the run under way has not returned")
            release.signal()
            let (cancelled, finishedWhenReturned) = await waiter.value
            #expect(!cancelled && finishedWhenReturned == 1)
            queue.sync {}
            #expect(started.current == 1)
        }
    }
}
