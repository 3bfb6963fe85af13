import Testing
import TimerKit
import TimerKitTesting

/// C5 exactly, on the virtual clock: what each policy does with missed deadlines, what it reports,
/// and that the deadlines always add up.
@Suite("Missed deadlines")
struct MissedDeadlineTests {
    /// A 1 s timer on a fresh virtual clock; returns the clock, the timer, its fires and its first deadline.
    func timer(_ policy: MissedDeadlinePolicy) throws -> (VirtualClock, ScheduledTimer, Recorder<TimerFire>, TimerInstant) {
        let virtual = VirtualClock()
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, missedDeadlines: policy) { _, fire in
            fires.append(fire)
        }
        return (virtual, timer, fires, virtual.now + .seconds(1))
    }

    @Test("C5: after a stretch in which nothing could fire, coalesce fires once for every deadline that came")
    func jumpCoalesces() throws {
        let (virtual, timer, fires, first) = try timer(.coalesce)
        #expect(virtual.jump(by: .milliseconds(3_500)) == 1)
        let fire = try #require(fires.all.first)
        #expect(fire.deadlineCount == 3 && fire.skippedDeadlineCount == 0)
        #expect(fire.scheduledDeadline == first)
        #expect(fire.lateness == .milliseconds(2_500))
        #expect(timer.nextDeadline == first + .seconds(3))
    }

    @Test("C5: under skip, the missed deadlines get no fire, the latest one — merely late — fires at once, and it reports how many were skipped")
    func jumpSkipsTheMissedAndFiresTheLate() throws {
        let (virtual, timer, fires, first) = try timer(.skip)
        #expect(virtual.jump(by: .milliseconds(3_500)) == 1)
        let fire = try #require(fires.all.first)
        #expect(fire.scheduledDeadline == first + .seconds(2), "the deadline at 3 s: its successor has not come")
        #expect(fire.deadlineCount == 1)
        #expect(fire.skippedDeadlineCount == 2, "the deadlines at 1 s and 2 s")
        #expect(fire.lateness == .milliseconds(500))
        #expect(timer.nextDeadline == first + .seconds(3))
        virtual.advance(by: .milliseconds(500))
        #expect(fires.all.last?.skippedDeadlineCount == 0, "reported once")
    }

    @Test("C5: under skip, deadlines that passed while suspended are skipped, and the next fire reports them")
    func skipAfterSuspensionReportsOnTheNextFire() throws {
        let (virtual, timer, fires, first) = try timer(.skip)
        timer.suspend()
        virtual.advance(by: .milliseconds(3_200))
        timer.resume()
        #expect(fires.count == 0, "every due deadline passed while suspended: nothing fires now")
        #expect(timer.nextDeadline == first + .seconds(3))
        virtual.advance(by: .milliseconds(800))
        let fire = try #require(fires.all.first)
        #expect(fire.scheduledDeadline == first + .seconds(3))
        #expect(fire.deadlineCount == 1 && fire.skippedDeadlineCount == 3)
    }

    @Test("C5: burst fires once per missed deadline, capped, after a stretch in which nothing could fire")
    func jumpBursts() throws {
        let (virtual, _, fires, first) = try timer(.burst(maxFires: 2))
        #expect(virtual.jump(by: .milliseconds(3_500)) == 2)
        #expect(fires.all.map(\.scheduledDeadline) == [first, first + .seconds(1)])
        #expect(fires.all.map(\.deadlineCount) == [1, 2], "the last fire stands for the rest")
    }

    @Test(
        "C5: a late but not missed deadline fires normally under every policy, also after a jump",
        arguments: [MissedDeadlinePolicy.coalesce, .skip, .burst(maxFires: 3)])
    func lateIsNotMissedAfterAJump(policy: MissedDeadlinePolicy) throws {
        let (virtual, _, fires, first) = try timer(policy)
        virtual.jump(by: .milliseconds(1_700))
        let fire = try #require(fires.all.first)
        #expect(fires.count == 1)
        #expect(fire.scheduledDeadline == first && fire.deadlineCount == 1 && fire.skippedDeadlineCount == 0)
        #expect(fire.lateness == .milliseconds(700))
    }

    @Test("C5: a jump fires each due timer once, in (deadline, creation) order, with now at the end of the jump")
    func jumpFiresEachTimerOnceInOrder() throws {
        let virtual = VirtualClock()
        let order = Recorder<(String, TimerInstant)>()
        // Handlers read the instant from their fire, or hold the clock weakly: a pending timer whose
        // handler held its own clock would keep it, and so itself, alive.
        try ScheduledTimer.repeating(every: .milliseconds(300), clock: virtual.clock) { timer, fire in
            order.append(("fast", fire.firedAt))
            timer.invalidate()
        }
        try ScheduledTimer.once(at: .after(.milliseconds(100)), clock: virtual.clock) { _, fire in order.append(("once", fire.firedAt)) }
        try virtual.clock.schedule(at: .after(.milliseconds(200))) { [weak virtual] in
            if let virtual { order.append(("callback", virtual.now)) }
        }
        let end = virtual.now + .seconds(2)
        #expect(virtual.jump(to: end) == 3)
        #expect(order.all.map(\.0) == ["once", "callback", "fast"])
        #expect(order.all.allSatisfy { $0.1 == end })
        #expect(virtual.now == end)
    }

    @Test(
        "C5: under every policy, the fires account for each grid deadline exactly once, whatever stalls, suspensions and steps come",
        arguments: [MissedDeadlinePolicy.coalesce, .skip, .burst(maxFires: 3)], [3, 17, 4242] as [UInt64])
    func deadlinesAddUp(policy: MissedDeadlinePolicy, seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let virtual = VirtualClock()
        let interval = Duration.milliseconds(100)
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: interval, clock: virtual.clock, missedDeadlines: policy) { _, fire in fires.append(fire) }
        let first = virtual.now + interval
        for _ in 0..<300 {
            let step = Duration.milliseconds(Int64.random(in: 1...1_000, using: &random))
            switch Int.random(in: 0..<5, using: &random) {
            case 0: virtual.jump(by: step)
            case 1: timer.suspend()
            case 2: timer.resume()
            default: virtual.advance(by: step)
            }
        }
        timer.resume()
        // One more ordinary deadline, so that deadlines skipped last are reported.
        virtual.jump(by: interval * 20)
        virtual.advance(by: interval)
        var accounted = 0
        for fire in fires.all {
            accounted += fire.skippedDeadlineCount
            #expect(fire.scheduledDeadline == first + interval * accounted, "each fire's deadline follows the ones before it")
            #expect(fire.firedAt >= fire.scheduledDeadline, "C2")
            accounted += fire.deadlineCount
        }
        #expect(timer.nextDeadline == first + interval * accounted, "every grid deadline before the next one is accounted for")
        #expect(fires.count > 50)
        if policy == .skip { #expect(fires.all.contains { $0.skippedDeadlineCount > 0 }) }
        if policy == .coalesce { #expect(fires.all.contains { $0.deadlineCount > 1 }) }
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
