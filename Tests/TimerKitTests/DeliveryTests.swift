import Dispatch
import Foundation
import Testing
import TimerKit
import TimerKitTesting

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

    @Test("C15: a timer on one queue keeps its grid while another thread is blocked in a 300 ms busy loop")
    func blockedThreadDelaysOnlyItsOwnTimers() async throws {
        // Long enough that the suite's own parallel load cannot make the free timer miss one.
        let interval = Duration.milliseconds(60)
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: interval, delivery: .queue(DispatchQueue(label: "free"))) { _, fire in
            fires.append(fire)
        }
        let blocked = DispatchQueue(label: "blocked")
        let blockedFires = Recorder<TimerFire>()
        let blockedTimer = try ScheduledTimer.repeating(every: interval, delivery: .queue(blocked)) { _, fire in
            blockedFires.append(fire)
        }
        try await Task.sleep(for: .milliseconds(100))
        blocked.async {
            let end = ContinuousClock.now + .milliseconds(300)
            while ContinuousClock.now < end {}
        }
        try await Task.sleep(for: .milliseconds(700))
        timer.invalidate()
        blockedTimer.invalidate()

        let all = fires.all
        #expect(all.count >= 10)
        let first = try #require(all.first).scheduledDeadline
        for (k, fire) in all.enumerated() {
            #expect(fire.scheduledDeadline == first + interval * k, "C4: on the grid")
            #expect(fire.deadlineCount == 1, "no deadline missed on the free queue")
            #expect(fire.lateness < generousLateness)
        }
        // The timer delivered to the blocked queue waited, then coalesced what it missed (C5).
        #expect(blockedFires.all.contains { $0.deadlineCount >= 4 })
    }

    @MainActor
    @Test("C15: a @MainActor handler runs on the main actor")
    func mainActorHandler() async throws {
        var ticks = 0
        let timer = try ScheduledTimer.repeatingOnMainActor(every: .milliseconds(5)) { _, _ in
            MainActor.assertIsolated()
            ticks += 1
        }
        #expect(await eventually { ticks >= 3 })
        timer.invalidate()
    }

    @Test("C15: engine-thread delivery runs off the caller's thread, right at the wake-up")
    func engineThreadDelivery() async throws {
        let names = Recorder<String>()
        try ScheduledTimer.once(at: .after(.milliseconds(5))) { _, _ in
            names.append(Thread.current.name ?? "")
        }
        #expect(await eventually { names.count == 1 })
        #expect(names.all.first?.hasPrefix("tk.") == true)
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
        virtual.advance(by: .seconds(5))
        #expect(virtual.pendingTimerCount == 0, "nothing runs before the first next()")
        let consumer = Task { () -> TimerFire? in
            for await fire in fires { return fire }
            return nil
        }
        #expect(await eventually { virtual.pendingTimerCount == 1 })
        virtual.advance(by: .seconds(1))
        let fire = try #require(await consumer.value)
        #expect(fire.deadlineCount == 1)
        #expect(fire.scheduledDeadline == TimerInstant(kind: .virtual, nanoseconds: 6_000_000_000))
    }
}
