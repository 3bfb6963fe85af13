import Dispatch
import Testing
import TimerKit
import TimerKitTesting

/// C1–C4 on the virtual clock: exact, instant, no sleeping (C5 is in MissedDeadlineTests.swift).
@Suite("Timing on the virtual clock")
struct TimingTests {
    @Test("C1: a timer runs on the clock it was created on, and its instants say which")
    func timerRunsOnItsClock() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.once(at: .after(.seconds(2)), clock: virtual.clock) { _, fire in fires.append(fire) }
        #expect(timer.clock == virtual.clock)
        #expect(timer.clock.kind == .virtual)
        virtual.advance(by: .seconds(1))
        #expect(fires.count == 0)
        virtual.advance(by: .seconds(1))
        #expect(fires.all.map(\.scheduledDeadline.clockKind) == [.virtual])
        #expect(fires.all.first?.firedAt == virtual.now)
    }

    @Test("C2: no fire happens before its deadline, however the clock is advanced")
    func neverEarly() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        for delay in [1, 7, 13, 500, 999] {
            try ScheduledTimer.once(at: .after(.milliseconds(delay)), clock: virtual.clock) { _, fire in fires.append(fire) }
        }
        try ScheduledTimer.repeating(every: .milliseconds(3), clock: virtual.clock) { _, fire in fires.append(fire) }
        var step = 0
        while virtual.now < TimerInstant(kind: .virtual, nanoseconds: 1_000_000_000) {
            step += 1
            virtual.advance(by: .microseconds(137 * (step % 11 + 1)))
        }
        #expect(fires.count > 300)
        for fire in fires.all {
            #expect(fire.firedAt >= fire.scheduledDeadline)
            #expect(fire.lateness == .zero, "the virtual clock fires exactly at each deadline")
        }
    }

    @Test("C3: a timer's tolerance defaults to zero and is kept as given")
    func toleranceIsKept() throws {
        let virtual = VirtualClock()
        let plain = try ScheduledTimer.once(at: .after(.seconds(1)), clock: virtual.clock) { _, _ in }
        let tolerant = try ScheduledTimer.repeating(every: .seconds(1), tolerance: .milliseconds(100), clock: virtual.clock) { _, _ in }
        #expect(plain.tolerance == .zero)
        #expect(tolerant.tolerance == .milliseconds(100))
    }

    @Test("C3: a tolerance longer than the 4.29 s the store uses is still kept exactly, with its delivery, and the timer fires at its deadline")
    func longToleranceIsKept() throws {
        let virtual = VirtualClock()
        let queue = DispatchQueue(label: "long-tolerance")
        let edge = Duration.nanoseconds(Int64(UInt32.max))
        let fires = Recorder<TimerFire>()
        let atEdge = try ScheduledTimer.once(at: .after(.seconds(1)), tolerance: edge, clock: virtual.clock) { _, _ in }
        let past = try ScheduledTimer.once(at: .after(.seconds(1)), tolerance: edge + .nanoseconds(1), clock: virtual.clock) { _, _ in }
        let hour = try ScheduledTimer.repeating(every: .seconds(10), tolerance: .seconds(3600), clock: virtual.clock, delivery: .queue(queue)) {
            _, fire in fires.append(fire)
        }
        #expect(atEdge.tolerance == edge)
        #expect(past.tolerance == edge + .nanoseconds(1))
        #expect(hour.tolerance == .seconds(3600))
        #expect(hour.delivery == .queue(queue))
        virtual.advance(by: .seconds(20))
        queue.sync {}
        #expect(fires.all.map(\.scheduledDeadline) == [virtual.now - .seconds(10), virtual.now])
        #expect(fires.all.allSatisfy { $0.lateness == .zero })
    }

    @Test("C4: the k-th deadline of a repeating timer is first + k·interval, whatever the lateness")
    func noDrift() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let interval = Duration.milliseconds(10)
        let timer = try ScheduledTimer.repeating(every: interval, first: .after(.milliseconds(3)), tolerance: .milliseconds(4), clock: virtual.clock) {
            _, fire in
            fires.append(fire)
        }
        let first = virtual.now + .milliseconds(3)
        // Advance in ragged steps that never line up with the grid.
        for step in 0..<1000 { virtual.advance(by: .microseconds(7_300 + (step % 5) * 900)) }
        #expect(fires.count > 700)
        for (k, fire) in fires.all.enumerated() {
            #expect(fire.scheduledDeadline == first + interval * k)
            #expect(fire.deadlineCount == 1)
        }
        #expect(timer.nextDeadline == first + interval * fires.count)
    }
}
