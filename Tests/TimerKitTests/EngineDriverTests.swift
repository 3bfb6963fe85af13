import CTimerKitShims
import Dispatch
import Foundation
import Testing
import TimerKitTesting

@testable import TimerKit

/// The engine's drivers (C1, C2, C16): the kernel timer's arithmetic for Apple's kqueue, tested on
/// every platform, and the dispatch driver's edges. The whole suite runs on each driver in CI
/// (`-DTIMERKIT_DISPATCH_DRIVER`); these tests pin what the suite cannot see from the outside.
@Suite("Engine drivers")
struct EngineDriverTests {
    // MARK: The kqueue timer (Apple platforms), its arithmetic on every platform

    /// Mach timebases (ns = ticks × numer ÷ denom): Intel Macs and the simulator (1/1), Apple
    /// silicon's 24 MHz (125/3), and two that round in every way and saturate.
    static let timebases: [(numer: UInt32, denom: UInt32)] = [(1, 1), (125, 3), (7, 13), (1, 1_000)]

    @Test(
        "C1: on Apple, the continuous clock's kqueue timer is on mach_continuous_time (counts sleep), the suspending clock's on mach_absolute_time; both absolute and uncoalesced"
    )
    func kqueueTimerFlags() {
        let machTime = CTK_NOTE_MACHTIME | CTK_NOTE_ABSOLUTE | CTK_NOTE_CRITICAL
        let continuous = ctk_kevent_timer_for(0, 1_000_000_000, 125, 3)
        let suspending = ctk_kevent_timer_for(1, 1_000_000_000, 125, 3)
        #expect(continuous.fflags == machTime | CTK_NOTE_MACH_CONTINUOUS_TIME)
        #expect(suspending.fflags == machTime)
        // One second is 24 million ticks of Apple silicon's 24 MHz timebase, on either clock.
        #expect(continuous.data == 24_000_000)
        #expect(suspending.data == 24_000_000)
        // Apple's flag values, which the shim's compile for macOS checks against <sys/event.h>.
        #expect([CTK_NOTE_ABSOLUTE, CTK_NOTE_CRITICAL, CTK_NOTE_MACH_CONTINUOUS_TIME, CTK_NOTE_MACHTIME] == [0x8, 0x20, 0x80, 0x100])
    }

    @Test("C2: a deadline in Mach ticks is the first tick at or after the deadline in nanoseconds, for every timebase", arguments: timebases.indices)
    func machTicksNeverEarly(timebase: Int) {
        let (numer, denom) = Self.timebases[timebase]
        var random = SeededRandom(seed: 16 + UInt64(timebase))
        var samples: [UInt64] = [0, 1, 2, 3, 41, 999_999_999, 1_000_000_000, UInt64(UInt32.max), UInt64(UInt32.max) + 1]
        for _ in 0..<20_000 {
            // Deadlines of every magnitude, up to 2^62 ns (146 years).
            samples.append(UInt64.random(in: 0...(1 << UInt64.random(in: 1...62, using: &random)), using: &random))
        }
        var early = 0
        var late = 0
        for nanoseconds in samples {
            let ticks = ctk_mach_ticks_from_nanoseconds(nanoseconds, numer, denom)
            guard ticks < UInt64(Int64.max) else { continue }  // saturated: checked below
            if ctk_nanoseconds_from_mach_ticks(ticks, numer, denom) < nanoseconds { early += 1 }
            if ticks > 0 && ctk_nanoseconds_from_mach_ticks(ticks - 1, numer, denom) >= nanoseconds { late += 1 }
        }
        #expect(early == 0, "a tick before the deadline")
        #expect(late == 0, "not the first tick at or after the deadline")
    }

    @Test("C17: a deadline too far for 64-bit Mach ticks saturates instead of wrapping; a kqueue timer is never armed for tick 0, which means now")
    func machTicksSaturate() {
        #expect(ctk_mach_ticks_from_nanoseconds(UInt64(Int64.max), 1, 1_000) == UInt64(Int64.max))
        #expect(ctk_mach_ticks_from_nanoseconds(UInt64.max, 1, 1) == UInt64(Int64.max))
        #expect(ctk_mach_ticks_from_nanoseconds(UInt64(Int64.max), 125, 3) == 221_360_928_884_514_620)
        #expect(ctk_kevent_timer_for(0, .max, 1, 1_000).data == .max)
        #expect(ctk_kevent_timer_for(0, 0, 125, 3).data == 1)
    }

    // MARK: The dispatch driver's edges

    @Test(
        "C1, C8: a wall clock on the dispatch driver keeps firing after the engine asks to be woken at once, and its shutdown ends the driver and frees the engine",
        .checksLeaks)
    func dispatchWallClockWakesAtOnce() async throws {
        let watchedEngine: WatchedObject
        let fired = Counter()
        do {
            let engine = TimerEngine(kind: .wall, isShared: false, driver: DispatchDriver(kind: .wall))
            watchedEngine = watchForLeaks(engine)
            let clock = TimerClock(engine: engine)
            // 100 deadlines already missed, fired as a burst: after each run budget the engine
            // yields and arms its driver for "now" (1 ns on the wall clock).
            try ScheduledTimer.repeating(
                every: .milliseconds(1), first: .at(clock.now.advanced(by: .milliseconds(-100))), clock: clock,
                missedDeadlines: .burst(maxFires: 1_000)
            ) { timer, _ in
                if fired.increment() == 3 * TimerEngine.runBudget { timer.invalidate() }
            }
            #expect(await eventually { fired.current == 3 * TimerEngine.runBudget }, "the burst went on after a yield")
            let later = Counter()
            try clock.schedule(at: .after(.milliseconds(10))) { later.increment() }
            #expect(await eventually { later.current == 1 }, "a later deadline still fires")
            clock.shutdown()
        }
        #expect(await eventually { watchedEngine.isReleased }, "the shutdown woke the driver, which ended and let the engine go")
    }

    @Test(
        "C17: the dispatch driver arms any deadline without overflow — a continuous one a century ahead, a wall one past 2038 — and a deadline that has come as now on every clock"
    )
    func dispatchDeadlines() {
        for kind in [TimerClock.Kind.continuous, .suspending, .wall] {
            let now = SystemClock.now(kind)
            // 1 ns on the wall clock would be DISPATCH_TIME_FOREVER for dispatch_walltime.
            for due in [1, now - 1, now] {
                guard case .time = DispatchDriver.dispatchDeadline(for: due, kind: kind, now: now) else {
                    Issue.record("a deadline that has come is armed on the wall timeline on the \(kind) clock")
                    continue
                }
            }
            let century: Int64 = 100 * 365 * 86_400 * 1_000_000_000
            switch DispatchDriver.dispatchDeadline(for: now + century, kind: kind, now: now) {
            case .wall: #expect(kind == .wall)
            case .time(let time): #expect(kind != .wall && time > .now())
            }
            #expect(DispatchDriver.dispatchDeadline(for: .max, kind: kind, now: now) == .time(.distantFuture))
        }
    }

    // MARK: Virtual time on the main thread

    @Test(
        "C15: advancing a virtual clock on the main actor runs its main-queue deliveries right there, never a sync onto the main queue from itself (which libdispatch traps)"
    )
    @MainActor
    func virtualAdvanceOnTheMainThread() throws {
        // On the main queue; on Linux its blocks run on a thread other than the main thread once
        // the test runner has called `dispatchMain()`.
        let virtual = VirtualClock()
        var fires = 0
        try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, .onMainActor { _, _ in fires += 1 })
        let callbackRan = Flag()
        try virtual.clock.schedule(at: .after(.milliseconds(1_500)), delivery: .queue(.main)) { callbackRan.set() }
        #expect(virtual.advance(by: .seconds(2)) == 3)
        #expect(fires == 2)
        #expect(callbackRan.isSet)
    }
}
