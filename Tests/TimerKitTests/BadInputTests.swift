import Foundation
import Testing
import TimerKit
import TimerKitTesting

/// C17: bad input is rejected with a clear, documented error; nothing crashes, spins, or fires at a
/// wrong time silently.
@Suite("Bad input")
struct BadInputTests {
    let clock = VirtualClock()

    @Test("C17: a zero or negative repeat interval is rejected", arguments: [Duration.zero, .nanoseconds(-1), .seconds(-5)])
    func nonPositiveInterval(interval: Duration) {
        #expect(throws: TimerError.nonPositiveInterval(interval)) {
            try ScheduledTimer.repeating(every: interval, clock: clock.clock) { _, _ in }
        }
        #expect(clock.pendingTimerCount == 0)
    }

    @Test("C17: a negative tolerance is rejected")
    func negativeTolerance() {
        #expect(throws: TimerError.negativeTolerance(.milliseconds(-1))) {
            try ScheduledTimer.once(at: .now, tolerance: .milliseconds(-1), clock: clock.clock) { _, _ in }
        }
    }

    @Test("C17: NaN, infinite and overflowing seconds are rejected before they become durations", arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteSeconds(seconds: Double) {
        #expect(throws: TimerError.nonFiniteDuration) { try Duration.validatedSeconds(seconds) }
    }

    @Test("C17: seconds whose nanoseconds overflow 64 bits are rejected; ordinary seconds convert exactly")
    func overflowingSeconds() throws {
        #expect(throws: TimerError.durationOverflow) { try Duration.validatedSeconds(1e300) }
        #expect(throws: TimerError.durationOverflow) { try Duration.validatedSeconds(-9.3e9) }
        #expect(try Duration.validatedSeconds(1.5) == .milliseconds(1_500))
    }

    @Test("C17: durations whose nanoseconds overflow 64 bits are rejected, as interval, tolerance or delay")
    func overflowingDurations() {
        let huge = Duration.seconds(Int64.max / 2)
        #expect(throws: TimerError.durationOverflow) { try ScheduledTimer.repeating(every: huge, clock: clock.clock) { _, _ in } }
        #expect(throws: TimerError.durationOverflow) { try ScheduledTimer.once(at: .now, tolerance: huge, clock: clock.clock) { _, _ in } }
        #expect(throws: TimerError.durationOverflow) { try ScheduledTimer.once(at: .after(huge), clock: clock.clock) { _, _ in } }
        // Fits in nanoseconds, but now + delay does not.
        #expect(throws: TimerError.durationOverflow) {
            try ScheduledTimer.once(at: .after(.nanoseconds(Int64.max)), clock: VirtualClock(start: .seconds(1)).clock) { _, _ in }
        }
    }

    @Test("C17: a burst limit below 1 is rejected")
    func burstLimit() {
        #expect(throws: TimerError.invalidBurstLimit(0)) {
            try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock, missedDeadlines: .burst(maxFires: 0)) { _, _ in }
        }
    }

    @Test("C17: an instant of another clock is rejected")
    func clockMismatch() {
        #expect(throws: TimerError.clockMismatch(expected: .virtual, got: .wall)) {
            try ScheduledTimer.once(at: .at(TimerInstant(Date())), clock: clock.clock) { _, _ in }
        }
    }

    @Test("C17: a deadline in the past fires at once, reporting how late it is")
    func pastDeadlineFiresAtOnce() throws {
        let virtual = VirtualClock(start: .seconds(10))
        let fires = Recorder<TimerFire>()
        try ScheduledTimer.once(at: .after(.seconds(-3)), clock: virtual.clock) { _, fire in fires.append(fire) }
        try ScheduledTimer.once(at: .at(TimerInstant(kind: .virtual, nanoseconds: 0)), clock: virtual.clock) { _, fire in fires.append(fire) }
        virtual.advance(by: .zero)
        #expect(fires.all.map(\.lateness) == [.seconds(10), .seconds(3)])
    }

    @Test("C17: a past deadline on a real clock fires at once")
    func pastDeadlineOnRealClock() async throws {
        let fired = Counter()
        try ScheduledTimer.once(at: .at(TimerClock.continuous.now - .seconds(5))) { _, _ in fired.increment() }
        #expect(await eventually { fired.current == 1 })
    }

    @Test("C17: a deadline at the end of time never fires and costs nothing while waiting")
    func endOfTime() throws {
        let fired = Counter()
        let timer = try ScheduledTimer.repeating(
            every: .seconds(60 * 60 * 24 * 365 * 200), first: .at(TimerInstant(kind: .virtual, nanoseconds: .max)), clock: clock.clock
        ) { _, _ in fired.increment() }
        #expect(clock.advance(by: .seconds(60 * 60 * 24 * 365 * 100)) == 0)
        #expect(fired.current == 0)
        #expect(timer.isValid)
        #expect(timer.nextDeadline?.nanoseconds == .max)
    }

    @Test("C17: a repeating timer whose next deadline would overflow stops at the end of time instead of wrapping")
    func gridSaturates() throws {
        let virtual = VirtualClock(start: .seconds(9_000_000_000))  // about 285 years
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(300_000_000), first: .now, clock: virtual.clock) { _, fire in fires.append(fire) }
        virtual.advance(by: .zero)
        #expect(fires.count == 1)
        #expect(timer.nextDeadline?.nanoseconds == .max)
        #expect(virtual.runUntilIdle(maxFires: 5) == 0, "the end of time never comes, so the clock is idle")
        #expect(virtual.nextDeadline == nil)
        #expect(virtual.advance(to: TimerInstant(kind: .virtual, nanoseconds: .max)) == 0)
    }

    @Test("C17: rescheduling with bad input throws and leaves the timer as it was")
    func rescheduleBadInput() throws {
        let timer = try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock) { _, _ in }
        let next = timer.nextDeadline
        #expect(throws: TimerError.nonPositiveInterval(.zero)) { try timer.reschedule(at: .now, every: .zero) }
        #expect(throws: TimerError.clockMismatch(expected: .virtual, got: .wall)) { try timer.reschedule(at: .at(TimerInstant(Date()))) }
        #expect(timer.nextDeadline == next)
        #expect(timer.interval == .seconds(1))
    }

    @Test("C17: every error explains itself")
    func errorsDescribeThemselves() {
        let errors: [TimerError] = [
            .nonPositiveInterval(.zero), .negativeTolerance(.seconds(-1)), .nonFiniteDuration, .durationOverflow,
            .invalidBurstLimit(0), .clockMismatch(expected: .wall, got: .virtual), .timerInvalidated, .clockShutDown
        ]
        let descriptions = errors.map(\.description)
        #expect(Set(descriptions).count == errors.count)
        #expect(descriptions.allSatisfy { $0.count > 20 })
    }
}

extension BadInputTests {
    @Test("C17: a calendar date far in the past fires at once on every clock, without overflow")
    func distantPastDate() async throws {
        let fired = Counter()
        for clock in [TimerClock.continuous, .suspending, .wall] {
            try ScheduledTimer.once(at: .date(.distantPast), clock: clock) { _, _ in fired.increment() }
        }
        #expect(await eventually { fired.current == 3 })
    }

    @Test("C17: a repeating timer whose first deadline is at the start of time coalesces and continues on its grid")
    func startOfTime() throws {
        let virtual = VirtualClock(start: .seconds(10))
        let fires = Recorder<TimerFire>()
        let timer = try ScheduledTimer.repeating(every: .seconds(3), first: .at(TimerInstant(kind: .virtual, nanoseconds: .min)), clock: virtual.clock) {
            _, fire in
            fires.append(fire)
        }
        virtual.advance(by: .zero)
        let fire = try #require(fires.all.first)
        #expect(fire.deadlineCount > 1)
        let next = try #require(timer.nextDeadline)
        #expect(next > virtual.now && next <= virtual.now + .seconds(3))
        virtual.advance(by: .seconds(3))
        #expect(fires.all.count == 2 && fires.all[1].deadlineCount == 1)
    }
}
