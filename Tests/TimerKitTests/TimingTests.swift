import Testing
import TimerKit
import TimerKitTesting

/// C1–C5 on the virtual clock: exact, instant, no sleeping.
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

    @Test("C4: the k-th deadline of a repeating timer is first + k·interval, whatever the lateness")
    func noDrift() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let interval = Duration.milliseconds(10)
        let timer = try ScheduledTimer.repeating(every: interval, first: .after(.milliseconds(3)), tolerance: .milliseconds(4), clock: virtual.clock) { _, fire in
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

    @Test("C5: coalesce fires once for all deadlines missed while suspended, then continues on the grid")
    func coalesceAfterMissedDeadlines() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock) { _, fire in fires.append(fire) }
        let start = virtual.now
        virtual.advance(by: .seconds(1))
        timer.suspend()
        virtual.advance(by: .milliseconds(5_500))  // deadlines at 2, 3, 4, 5, 6 s pass
        timer.resume()
        #expect(fires.count == 2)
        let coalesced = try #require(fires.all.last)
        #expect(coalesced.deadlineCount == 5)
        #expect(coalesced.scheduledDeadline == start + .seconds(2))
        #expect(coalesced.lateness == .milliseconds(4_500))
        #expect(timer.nextDeadline == start + .seconds(7))
        virtual.advance(by: .milliseconds(500))
        #expect(fires.all.last?.scheduledDeadline == start + .seconds(7))
        #expect(fires.all.last?.deadlineCount == 1)
    }

    @Test("C5: skip fires nothing for missed deadlines and continues at the next grid deadline")
    func skipMissedDeadlines() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, missedDeadlines: .skip) { _, fire in fires.append(fire) }
        let start = virtual.now
        timer.suspend()
        virtual.advance(by: .milliseconds(3_200))
        timer.resume()
        #expect(fires.count == 0)
        #expect(timer.nextDeadline == start + .seconds(4))
        virtual.advance(by: .milliseconds(800))
        #expect(fires.all.map(\.scheduledDeadline) == [start + .seconds(4)])
    }

    @Test("C5: burst fires once per missed deadline, at most maxFires times, the last standing for the rest")
    func burstMissedDeadlines() throws {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, missedDeadlines: .burst(maxFires: 3)) { _, fire in
            fires.append(fire)
        }
        let start = virtual.now
        timer.suspend()
        virtual.advance(by: .milliseconds(5_500))  // 1, 2, 3, 4, 5 s pass
        timer.resume()
        #expect(fires.all.map(\.deadlineCount) == [1, 1, 3])
        #expect(fires.all.map(\.scheduledDeadline) == [start + .seconds(1), start + .seconds(2), start + .seconds(3)])
        #expect(timer.nextDeadline == start + .seconds(6))

        // Fewer missed deadlines than the limit: one fire each.
        timer.suspend()
        virtual.advance(by: .seconds(2))  // 6, 7 s pass
        timer.resume()
        #expect(fires.all.suffix(2).map(\.deadlineCount) == [1, 1])
        #expect(fires.count == 5)
    }

    @Test("C5: a late but not missed deadline fires normally under every policy")
    func lateIsNotMissed() throws {
        for policy in [MissedDeadlinePolicy.coalesce, .skip, .burst(maxFires: 4)] {
            let virtual = VirtualClock()
            let fires = Recorder<TimerFire>()
            let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, missedDeadlines: policy) { _, fire in fires.append(fire) }
            virtual.advance(by: .milliseconds(1_500))
            #expect(fires.all.map(\.deadlineCount) == [1], "policy \(policy)")
            timer.invalidate()
        }
    }

    @Test("C5: a fire tells how many deadlines it stands for and how late it is")
    func fireContextIsComplete() throws {
        let virtual = VirtualClock(start: .seconds(100))
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .milliseconds(250), clock: virtual.clock) { _, fire in fires.append(fire) }
        timer.suspend()
        virtual.advance(by: .milliseconds(1_100))
        timer.resume()
        let fire = try #require(fires.all.first)
        #expect(fire.deadlineCount == 4)
        #expect(fire.lateness == .milliseconds(850))
        #expect(fire.sequenceNumber == 1)
        #expect(!fire.isManual)
        #expect(fire.firedAt == TimerInstant(kind: .virtual, nanoseconds: 101_100_000_000))
    }
}
