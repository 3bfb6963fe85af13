import Foundation
import Testing
import TimerKit
import TimerKitTesting

/// The countdown, exactly, on the virtual clock.
@Suite("Countdown")
struct CountdownTests {
    /// A countdown on a fresh virtual clock, recording its ticks.
    func countdown(
        _ deadline: TimerStart, unit: Duration = .seconds(1), start: Duration = .zero
    ) throws -> (VirtualClock, Countdown, Recorder<Countdown.Tick>) {
        let virtual = VirtualClock(start: start)
        let ticks = Recorder<Countdown.Tick>()
        let countdown = try Countdown.start(to: deadline, unit: unit, clock: virtual.clock) { _, tick in ticks.append(tick) }
        return (virtual, countdown, ticks)
    }

    func at(_ seconds: Double) -> TimerInstant {
        TimerInstant(kind: .virtual, nanoseconds: Int64((seconds * 1e9).rounded()))
    }

    @Test("The rounding rule: a 3 s countdown shows 3 at the start, then 2, 1 and a final 0, each at the instant the value changes")
    func roundingRule() throws {
        let (virtual, countdown, ticks) = try countdown(.after(.seconds(3)))
        #expect(ticks.all.map(\.value) == [3], "the first tick comes at once")
        virtual.advance(by: .seconds(10))
        #expect(ticks.all.map(\.value) == [3, 2, 1, 0])
        #expect(ticks.all.map(\.instant) == [at(0), at(1), at(2), at(3)])
        #expect(ticks.all.map(\.remaining) == [.seconds(3), .seconds(2), .seconds(1), .zero])
        #expect(ticks.all.map(\.isFinished) == [false, false, false, true])
        #expect(countdown.isFinished && countdown.remaining == .zero && countdown.value == 0)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("A value is the remaining time in units rounded up: 2.3 s shows 3, and the next tick comes when 2 s remain")
    func roundsUp() throws {
        let (virtual, countdown, ticks) = try countdown(.after(.milliseconds(2_300)))
        #expect(ticks.all.map(\.value) == [3])
        #expect(countdown.value == 3)
        virtual.advance(by: .milliseconds(299))
        #expect(ticks.count == 1)
        virtual.advance(by: .milliseconds(1))
        #expect(ticks.all.last?.value == 2 && ticks.all.last?.instant == at(0.3))
        #expect(ticks.all.last?.remaining == .seconds(2))
    }

    @Test("The final tick comes exactly once: also for a countdown created after its deadline, which has no other tick")
    func createdAfterItsDeadline() throws {
        let (virtual, countdown, ticks) = try countdown(.after(.seconds(-5)))
        virtual.advance(by: .zero)
        #expect(ticks.all.map(\.value) == [0])
        #expect(countdown.isFinished)
        virtual.advance(by: .seconds(10))
        #expect(ticks.count == 1)
    }

    @Test("After a long sleep, the countdown finishes once, with no replay of the ticks it slept through")
    func finishesOnceAfterASleep() throws {
        let (virtual, _, ticks) = try countdown(.after(.seconds(60)))
        virtual.jump(by: .seconds(3_600))
        #expect(ticks.all.map(\.value) == [60, 0])
        #expect(ticks.all.last?.instant == at(3_600))
        virtual.advance(by: .seconds(60))
        #expect(ticks.count == 2)
    }

    @Test("A stall in the middle shows the current value at once, then ticks on the deadline's grid again")
    func stallInTheMiddle() throws {
        let (virtual, _, ticks) = try countdown(.after(.seconds(10)))
        virtual.jump(by: .milliseconds(3_500))
        #expect(ticks.all.map(\.value) == [10, 7], "6.5 s remaining shows 7")
        virtual.advance(by: .milliseconds(500))
        #expect(ticks.all.last?.value == 6 && ticks.all.last?.instant == at(4))
    }

    @Test("Pause and resume are exact: paused at 41.3 s remaining, it resumes from 41.3 s and ticks next when 41.0 s remain, with no burst")
    func pauseIsExact() throws {
        let (virtual, countdown, ticks) = try countdown(.after(.seconds(60)))
        virtual.advance(by: .milliseconds(18_700))
        #expect(countdown.remaining == .milliseconds(41_300))
        countdown.pause()
        countdown.pause()
        let before = ticks.count
        virtual.advance(by: .seconds(100))
        #expect(ticks.count == before, "no tick while paused")
        #expect(countdown.isPaused && countdown.remaining == .milliseconds(41_300) && countdown.value == 42)
        countdown.resume()
        countdown.resume()
        #expect(!countdown.isPaused)
        #expect(countdown.deadline == at(118.7 + 41.3))
        #expect(ticks.count == before, "nothing is replayed on resume")
        virtual.advance(by: .milliseconds(299))
        #expect(ticks.count == before)
        virtual.advance(by: .milliseconds(1))
        #expect(ticks.all.last?.value == 41 && ticks.all.last?.remaining == .seconds(41))
        virtual.advance(by: .seconds(100))
        #expect(ticks.all.last?.isFinished == true && ticks.all.last?.instant == at(160))
        #expect(ticks.all.filter(\.isFinished).count == 1)
    }

    @Test("currentTick reads what a display shows now, between ticks too, and frozen while paused")
    func currentTick() throws {
        let (virtual, countdown, _) = try countdown(.after(.seconds(60)))
        virtual.advance(by: .milliseconds(18_700))
        var tick = countdown.currentTick
        #expect(tick.value == 42 && tick.remaining == .milliseconds(41_300) && tick.instant == virtual.now && tick.deadline == at(60))
        countdown.pause()
        virtual.advance(by: .seconds(30))
        tick = countdown.currentTick
        #expect(tick.value == 42 && tick.remaining == .milliseconds(41_300) && tick.instant == virtual.now)
    }

    @Test("Countdowns to the same deadline tick at the same instants, whoever created them when")
    func countdownsTickInStep() throws {
        let virtual = VirtualClock()
        let deadline = virtual.now + .seconds(30)
        let first = Recorder<TimerInstant>()
        let second = Recorder<TimerInstant>()
        try Countdown.start(to: .at(deadline), clock: virtual.clock) { _, tick in first.append(tick.instant) }
        virtual.advance(by: .milliseconds(4_370))
        try Countdown.start(to: .at(deadline), clock: virtual.clock) { _, tick in second.append(tick.instant) }
        virtual.advance(by: .seconds(40))
        #expect(Array(first.all.suffix(second.count - 1)) == Array(second.all.dropFirst()))
        #expect(second.all.dropFirst().allSatisfy { (deadline - $0) / .seconds(1) == ((deadline - $0) / .seconds(1)).rounded() })
    }

    @Test("Other units: tenths of a second and minutes")
    func otherUnits() throws {
        let (tenthsClock, _, tenths) = try countdown(.after(.milliseconds(350)), unit: .milliseconds(100))
        tenthsClock.advance(by: .seconds(1))
        #expect(tenths.all.map(\.value) == [4, 3, 2, 1, 0])
        #expect(tenths.all.map(\.instant) == [at(0), at(0.05), at(0.15), at(0.25), at(0.35)])
        let (minutesClock, _, minutes) = try countdown(.after(.seconds(150)), unit: .seconds(60))
        minutesClock.advance(by: .seconds(200))
        #expect(minutes.all.map(\.value) == [3, 2, 1, 0])
        #expect(minutes.all.map(\.instant) == [at(0), at(30), at(90), at(150)])
    }

    @Test("C8: cancel() ends the countdown without a final tick")
    func cancel() throws {
        let (virtual, countdown, ticks) = try countdown(.after(.seconds(5)))
        virtual.advance(by: .seconds(2))
        countdown.cancel()
        virtual.advance(by: .seconds(10))
        #expect(ticks.all.map(\.value) == [5, 4, 3])
        #expect(countdown.isFinished)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C12: a countdown whose handle is dropped runs to its end")
    func droppedHandleRuns() throws {
        let virtual = VirtualClock()
        let ticks = Recorder<Int64>()
        _ = try Countdown.start(to: .after(.seconds(2)), clock: virtual.clock) { _, tick in ticks.append(tick.value) }
        virtual.advance(by: .seconds(3))
        #expect(ticks.all == [2, 1, 0])
    }

    @Test("C11: an owner-bound countdown holds its owner weakly and ends once the owner is gone", .checksLeaks)
    func ownerBound() throws {
        final class Screen: Sendable {
            let ticks = Recorder<Int64>()
        }
        let virtual = VirtualClock()
        var screen: Screen? = Screen()
        let watchedScreen: WatchedObject
        watchedScreen = watchForLeaks(screen)
        let countdown = try Countdown.start(
            to: .after(.seconds(10)), clock: virtual.clock,
            .bound(to: screen!) { screen, _, tick in
                screen.ticks.append(tick.value)
            })
        virtual.advance(by: .seconds(2))
        #expect(screen?.ticks.all == [10, 9, 8])
        screen = nil
        #expect(watchedScreen.isReleased, "the countdown does not keep its owner")
        virtual.advance(by: .seconds(1))
        #expect(countdown.isFinished)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("A countdown can be recreated from a stored deadline: a date on the wall clock, or an instant of its clock")
    func recreatedFromAStoredDeadline() throws {
        let (virtual, original, _) = try countdown(.after(.seconds(60)))
        virtual.advance(by: .seconds(20))
        let stored = original.deadline
        original.cancel()
        let ticks = Recorder<Int64>()
        try Countdown.start(to: .at(stored), clock: virtual.clock) { _, tick in ticks.append(tick.value) }
        #expect(ticks.all == [40])
        let wall = Date().addingTimeInterval(90)
        let onWall = try Countdown.start(to: .date(wall), clock: .wall) { _, _ in }
        #expect(abs(onWall.deadline.date!.timeIntervalSince(wall)) < 1e-6)
        onWall.cancel()
    }

    @Test("C17: bad input throws: a zero or negative unit, an instant of another clock")
    func badInput() throws {
        #expect(throws: TimerError.nonPositiveInterval(.zero)) { try Countdown.start(to: .after(.seconds(1)), unit: .zero) { _, _ in } }
        #expect(throws: TimerError.clockMismatch(expected: .continuous, got: .virtual)) {
            try Countdown.start(to: .at(TimerInstant(kind: .virtual, nanoseconds: 0))) { _, _ in }
        }
    }

    @Test("Remaining time formats for people with Foundation's Duration styles, and so does any Duration")
    func formatting() throws {
        let (virtual, _, ticks) = try countdown(.after(.seconds(3_909)))
        virtual.advance(by: .seconds(3_850))
        let posix = Locale(identifier: "en_US_POSIX")
        #expect(ticks.all.first?.formatted(.clock, locale: posix) == "1:05:09")
        #expect(ticks.all.last?.formatted(.clock, locale: posix) == "0:59")
        #expect(ticks.all.last?.formatted(.units(), locale: posix) == "59 sec")
        #expect(ticks.all.first?.formatted(.units(width: .wide), locale: posix) == "1 hour, 5 minutes, 9 seconds")
        // The same styles on any Duration (a lap, an elapsed time), a fraction rounded.
        #expect(Countdown.Tick.Style.clock.format(.seconds(3_909), locale: posix) == "1:05:09")
        #expect(Countdown.Tick.Style.clock.format(.milliseconds(59_400), locale: posix) == "0:59")
        #expect(Countdown.Tick.Style.units().format(.seconds(125), locale: posix) == "2 min, 5 sec")
    }

    @Test("C15: the ticks as an AsyncSequence start with the iteration and end after the final tick")
    func tickSequence() async throws {
        let virtual = VirtualClock()
        let ticks = try Countdown.ticks(to: .after(.seconds(3)), clock: virtual.clock)
        await virtual.advance(by: .seconds(1))
        #expect(ticks.countdown.value == 2, "the deadline is fixed at creation")
        let received = Recorder<Int64>()
        let consumer = Task(executorPreference: virtual.executor) {
            for await tick in ticks { received.append(tick.value) }
        }
        // One tick at a time: the sequence keeps only the newest tick for a consumer that lags.
        for expected in 1...2 {
            await virtual.advance(by: .zero)
            #expect(received.count == expected)
            await virtual.advance(by: .seconds(1))
        }
        await consumer.value
        #expect(received.all == [2, 1, 0], "starts with the value when iteration starts; ends after the final tick")
    }
}

extension RealTime {
    @Suite("Countdown in real time")
    struct CountdownRealTimeTests {
        @Test("A countdown in real time ticks on its grid, never early, and finishes once")
        func countdownSmoke() async throws {
            let ticks = Recorder<Countdown.Tick>()
            let countdown = try Countdown.start(to: .after(.milliseconds(300)), unit: .milliseconds(100)) { _, tick in ticks.append(tick) }
            #expect(await eventually { countdown.isFinished })
            let all = ticks.all
            #expect(all.filter(\.isFinished).count == 1)
            #expect(all.map(\.value) == all.map(\.value).sorted(by: >), "values only go down")
            for tick in all.dropFirst() {
                #expect(tick.instant >= tick.deadline - tick.unit * (tick.value), "C2: never before the value changes")
            }
            #expect(try #require(all.last).instant >= countdown.deadline)
        }
    }
}
