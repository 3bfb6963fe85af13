import Foundation
import Testing
import TimerKit
import TimerKitTesting

/// C1 and C2 on the system clocks, in real time.
extension RealTime {
    @Suite("System clocks")
    struct ClockTests {
        @Test("C1: the continuous, suspending and wall clocks read their own timelines")
        func clocksReadTheirTimelines() {
            let suspending = TimerClock.suspending.now
            let continuous = TimerClock.continuous.now
            let wall = TimerClock.wall.now
            #expect(continuous.clockKind == .continuous && suspending.clockKind == .suspending && wall.clockKind == .wall)
            #expect(continuous.nanoseconds >= suspending.nanoseconds, "the continuous clock also counts time asleep")
            #expect(abs(wall.date!.timeIntervalSinceNow) < 1)
            #expect(TimerClock.continuous.now >= continuous)
            #expect(TimerClock.continuous == .continuous && TimerClock.continuous != .suspending)
        }

        @Test("C1: a timer fires on each system clock", arguments: [TimerClock.continuous, .suspending, .wall])
        func firesOnEachClock(clock: TimerClock) async throws {
            let fires = Recorder<TimerFire>()
            try ScheduledTimer.once(at: .after(.milliseconds(15)), clock: clock) { _, fire in fires.append(fire) }
            #expect(await eventually { fires.count == 1 })
            let fire = try #require(fires.all.first)
            #expect(fire.scheduledDeadline.clockKind == clock.kind)
            #expect(fire.lateness >= .zero, "C2")
        }

        @Test("C1: a wall-clock timer set for a calendar date fires when the system clock reads that date")
        func wallClockDate() async throws {
            let target = Date().addingTimeInterval(0.15)
            let firedAt = Recorder<Date>()
            try ScheduledTimer.once(at: .date(target), clock: .wall) { _, _ in firedAt.append(Date()) }
            #expect(await eventually { firedAt.count == 1 })
            #expect(try #require(firedAt.all.first) >= target)
        }

        @Test("C2: across three clocks and hundreds of timers, no fire happens before its deadline as read on its clock")
        func neverEarlyInRealTime() async throws {
            let early = Counter()
            let fired = Counter()
            var random = SeededRandom(seed: 2)
            for clock in [TimerClock.continuous, .suspending, .wall] {
                for _ in 0..<150 {
                    let delay = Duration.microseconds(Int64.random(in: 0...60_000, using: &random))
                    try ScheduledTimer.once(at: .after(delay), clock: clock) { _, fire in
                        if clock.now < fire.scheduledDeadline || fire.firedAt < fire.scheduledDeadline { early.increment() }
                        fired.increment()
                    }
                }
            }
            #expect(await eventually { fired.current == 450 })
            #expect(early.current == 0)
        }

        @Test("C4: a repeating timer in real time keeps every fire on its grid")
        func gridInRealTime() async throws {
            let fires = Recorder<TimerFire>()
            let timer = try ScheduledTimer.repeating(every: .milliseconds(10)) { _, fire in fires.append(fire) }
            #expect(await eventually { fires.count >= 30 })
            timer.invalidate()
            let all = fires.all
            let first = all[0].scheduledDeadline
            var k = 0
            for fire in all {
                #expect(fire.scheduledDeadline == first + .milliseconds(10) * k)
                k += fire.deadlineCount
            }
        }
    }
}
