import Dispatch
import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit

/// C15: where handlers run, in real time.
extension RealTime {
    @Suite("Delivery")
    struct DeliveryTests {
        @Test("C15: a queue-delivered handler runs on its queue")
        func runsOnItsQueue() async throws {
            let queue = DispatchQueue(label: "delivery")
            let fires = Counter()
            let timer = try ScheduledTimer.repeating(every: .milliseconds(5), delivery: .queue(queue)) { _, _ in
                dispatchPrecondition(condition: .onQueue(queue))
                fires.increment()
            }
            #expect(await eventually { fires.current >= 3 })
            timer.invalidate()
        }

        @Test(
            "C15: while one queue is blocked in a 300 ms busy loop, a timer on another queue keeps firing on its grid; the blocked queue's timer waits, then coalesces"
        )
        func blockedThreadDelaysOnlyItsOwnTimers() async throws {
            let interval = Duration.milliseconds(30)
            let clock = TimerClock.continuous
            let fires = Recorder<TimerFire>()
            let timer = try ScheduledTimer.repeating(every: interval, clock: clock, delivery: .queue(DispatchQueue(label: "free"))) { _, fire in
                fires.append(fire)
            }
            let blocked = DispatchQueue(label: "blocked")
            let blockedFires = Recorder<TimerFire>()
            let blockedTimer = try ScheduledTimer.repeating(every: interval, clock: clock, delivery: .queue(blocked)) { _, fire in
                blockedFires.append(fire)
            }
            let busy = Recorder<TimerInstant>()
            try await Task.sleep(for: .milliseconds(50))
            blocked.async {
                busy.append(clock.now)
                let end = ContinuousClock.now + .milliseconds(300)
                while ContinuousClock.now < end {}
                busy.append(clock.now)
            }
            #expect(await eventually { busy.count == 2 })
            // Once free, the blocked queue runs the fire that stands for what it missed (C5).
            #expect(await eventually { blockedFires.all.contains { $0.deadlineCount >= 4 } })
            await timer.invalidateAndWait()
            await blockedTimer.invalidateAndWait()

            let (busyStart, busyEnd) = (busy.all[0], busy.all[1])
            let all = fires.all
            let first = try #require(all.first).scheduledDeadline
            var k = 0
            for fire in all {
                #expect(fire.scheduledDeadline == first + interval * k, "C4: on the grid, every deadline accounted for")
                #expect(fire.firedAt >= fire.scheduledDeadline, "C2")
                k += fire.deadlineCount
            }
            // The free queue's timer went on firing while the other queue was blocked (about 10 fires
            // on an idle machine; one is proof, and holds whatever the load).
            #expect(all.contains { $0.firedAt > busyStart && $0.firedAt < busyEnd })
            // The blocked queue's timer did not run in the meantime; then one fire stood for what it
            // missed (C5).
            #expect(!blockedFires.all.contains { $0.firedAt > busyStart + interval && $0.firedAt < busyEnd })
        }

        @MainActor
        @Test("C15: a @MainActor handler runs on the main actor")
        func mainActorHandler() async throws {
            var ticks = 0
            let timer = try ScheduledTimer.repeating(
                every: .milliseconds(5),
                .onMainActor { _, _ in
                    MainActor.assertIsolated()
                    ticks += 1
                })
            #expect(await eventually { ticks >= 3 })
            timer.invalidate()
        }

        @Test(
            "C15: engine-thread delivery runs on the clock's engine driver, not the caller's thread",
            arguments: [TimerClock.Kind.continuous, .suspending, .wall])
        func engineThreadDelivery(kind: TimerClock.Kind) async throws {
            let clock = TimerClock.dedicated(kind)
            defer { clock.shutdown() }
            let runs = Recorder<(thread: UInt64, onDriver: Bool)>()
            try ScheduledTimer.once(at: .after(.milliseconds(5)), clock: clock) { _, _ in
                runs.append((SystemClock.currentThreadID, clock.engine.isOnDriver))
            }
            #expect(await eventually { runs.count == 1 })
            let run = try #require(runs.all.first)
            #expect(run.onDriver, "on the driver's thread (kernel timer) or queue (dispatch)")
            #expect(run.thread != SystemClock.currentThreadID)
        }

        @Test(
            "C15, C16: the kernel-timer driver is one thread of its own, named for its clock, that serves every wake-up",
            .enabled(
                if: EngineDriverKind.serving(.continuous) == .kernelTimer, "about the kernel-timer driver; the dispatch driver runs on its queue's threads"),
            arguments: [TimerClock.Kind.continuous, .suspending, .wall].filter { EngineDriverKind.serving($0) == .kernelTimer })
        func kernelTimerDriverThread(kind: TimerClock.Kind) async throws {
            let clock = TimerClock.dedicated(kind)
            defer { clock.shutdown() }
            let threads = Recorder<UInt64>()
            for delay in [5, 25, 45] {
                try ScheduledTimer.once(at: .after(.milliseconds(delay)), clock: clock) { _, _ in
                    threads.append(SystemClock.currentThreadID)
                }
            }
            #expect(await eventually { threads.count == 3 })
            let engineThread = try #require(clock.engine.driverThread)
            #expect(engineThread != 0)
            #expect(threads.all == [engineThread, engineThread, engineThread])
            #if os(Linux)
            // The engine thread carries its own name (the system's, not Foundation's), also when a
            // dispatch worker created it.
            let name = try String(contentsOfFile: "/proc/self/task/\(engineThread)/comm", encoding: .utf8)
            #expect(name.trimmingCharacters(in: .whitespacesAndNewlines) == "tk.\(kind)")
            #endif
        }

        @Test("C15: fires arrive as an AsyncSequence that ends when the timer is invalidated")
        func asyncSequenceEndsOnInvalidate() async throws {
            let fires = try ScheduledTimer.fires(every: .milliseconds(20))
            var received: [TimerFire] = []
            for await fire in fires {
                received.append(fire)
                if received.count == 3 { fires.timer.invalidate() }
            }
            #expect(received.count == 3)
            let numbers = received.map(\.sequenceNumber)
            #expect(numbers == numbers.sorted() && Set(numbers).count == 3)
        }

        @Test("C15: cancelling the consuming task invalidates the timer and ends the sequence")
        func asyncSequenceCancellation() async throws {
            let fires = try ScheduledTimer.fires(every: .milliseconds(5))
            let received = Counter()
            let consumer = Task {
                for await _ in fires { received.increment() }
            }
            #expect(await eventually { received.current >= 2 })
            consumer.cancel()
            await consumer.value
            #expect(!fires.timer.isValid)
        }

        @Test("C15: leaving a for-await loop early invalidates the timer")
        func asyncSequenceBreakInvalidates() async throws {
            let fires = try ScheduledTimer.fires(every: .milliseconds(5))
            // Fires merge when the consumer lags, so wait for "at least the second", not "exactly".
            for await fire in fires where fire.sequenceNumber >= 2 { break }
            #expect(!fires.timer.isValid)
        }

        @Test("C5, C15: a slow consumer receives coalesced fires, not a growing backlog")
        func slowConsumerSeesCoalescedFires() async throws {
            let fires = try ScheduledTimer.fires(every: .milliseconds(2))
            var received: [TimerFire] = []
            for await fire in fires {
                received.append(fire)
                if received.count == 4 { break }
                try await Task.sleep(for: .milliseconds(30))
            }
            #expect(received.dropFirst().allSatisfy { $0.deadlineCount >= 2 })
        }
    }
}

extension RealTime.DeliveryTests {
    @Test("C15: a fire sequence starts its timer when iteration starts, not before")
    func sequenceStartsWithIteration() async throws {
        let virtual = VirtualClock()
        let fires = try ScheduledTimer.fires(every: .seconds(1), clock: virtual.clock)
        await virtual.advance(by: .seconds(5))
        #expect(virtual.pendingTimerCount == 0, "nothing runs before the first next()")
        let consumer = Task { () -> TimerFire? in
            for await fire in fires { return fire }
            return nil
        }
        #expect(await eventually { virtual.pendingTimerCount == 1 })
        await virtual.advance(by: .seconds(1))
        let fire = try #require(await consumer.value)
        #expect(fire.deadlineCount == 1)
        #expect(fire.scheduledDeadline == TimerInstant(kind: .virtual, nanoseconds: 6_000_000_000))
    }

    @Test("C8, C15: fires waiting for a busy consumer are dropped when the timer is invalidated: the next element is the end, never a fire from before")
    func invalidationDropsWaitingFires() async throws {
        let virtual = VirtualClock()
        let fires = try ScheduledTimer.fires(every: .seconds(1), clock: virtual.clock, missedDeadlines: .burst(maxFires: 3))
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task { () -> (first: TimerFire?, second: TimerFire?) in
            var iterator = fires.makeAsyncIterator()
            let first = await iterator.next()
            for await _ in gate { break }  // busy until the test says
            return (first, await iterator.next())
        }
        #expect(await eventually { virtual.pendingTimerCount == 1 })
        await virtual.advance(by: .seconds(4))  // the first is taken; three more wait
        fires.timer.invalidate()
        open.yield()
        let (first, second) = await consumer.value
        #expect(first?.sequenceNumber == 1)
        #expect(second == nil, "a fire from before invalidate() came after it: \(String(describing: second))")
    }
}
