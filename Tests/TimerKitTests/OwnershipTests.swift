import Foundation
import Synchronization
import Testing
import TimerKitTesting

@testable import TimerKit

/// C11 and C12: the articles' scenes, in real time.
extension RealTime {
    @Suite("Ownership")
    struct OwnershipTests {
        /// The articles' view controller: it keeps a repeating timer in a property and calls its own
        /// method from the timer.
        final class Screen: @unchecked Sendable {
            private let lock = NSLock()
            private var storedTimer: ScheduledTimer?
            var timer: ScheduledTimer? { lock.withLock { storedTimer } }
            let ticks = Counter()
            let deinits: Counter

            init(deinits: Counter) throws {
                self.deinits = deinits
                let timer = try ScheduledTimer.repeating(
                    every: .milliseconds(20),
                    .bound(to: self) { screen, _, _ in
                        screen.tick()
                    })
                lock.withLock { storedTimer = timer }
            }

            func tick() { ticks.increment() }

            deinit { deinits.increment() }
        }

        @Test("C11: an object keeping a repeating timer in a property deinitializes as soon as its last outside reference goes")
        func ownerDeinitializesAtOnce() async throws {
            let deinits = Counter()
            var screen: Screen? = try Screen(deinits: deinits)
            let ticks = try #require(screen?.ticks)
            let timer = try #require(screen?.timer)
            #expect(await eventually { ticks.current >= 2 })
            screen = nil
            // At once, unless a run was under way: the run holds its owner until it returns (C11),
            // and a loaded machine can preempt one mid-run.
            #expect(await eventually { deinits.current == 1 }, "the timer did not keep its owner alive")

            // At its next deadline the timer finds the owner gone and ends without calling the handler.
            #expect(await eventually { !timer.isValid })
            let ticksAfterDeinit = ticks.current
            try await Task.sleep(for: .milliseconds(100))
            #expect(ticks.current == ticksAfterDeinit)
        }

        @MainActor
        final class CountdownViewModel {
            var timer: ScheduledTimer?
            var remaining = 1_000
            let deinits: Counter

            init(deinits: Counter) { self.deinits = deinits }

            func start() throws {
                timer = try ScheduledTimer.repeating(
                    every: .milliseconds(10),
                    .onMainActor(bound: self) { model, _, _ in
                        model.remaining -= 1
                    })
            }

            deinit { deinits.increment() }
        }

        @MainActor
        @Test("C11: a main-actor owner with a @MainActor handler deinitializes when released, without invalidate()")
        func mainActorOwnerDeinitializes() async throws {
            let deinits = Counter()
            var model: CountdownViewModel? = CountdownViewModel(deinits: deinits)
            try model?.start()
            #expect(await eventually { (model?.remaining ?? 0) <= 997 })
            let timer = try #require(model?.timer)
            model = nil
            #expect(deinits.current == 1)
            #expect(await eventually { !timer.isValid })
        }

        @Test("C12: a timer whose handle is dropped still fires")
        func droppedHandleStillFires() async throws {
            let oneShot = Counter()
            let repeating = Counter()
            do {
                _ = try ScheduledTimer.once(at: .after(.milliseconds(30))) { _, _ in oneShot.increment() }
                try ScheduledTimer.repeating(every: .milliseconds(10)) { timer, _ in
                    if repeating.increment() == 5 { timer.invalidate() }
                }
            }
            #expect(await eventually { oneShot.current == 1 && repeating.current == 5 })
            try await Task.sleep(for: .milliseconds(50))
            #expect(repeating.current == 5)
        }

        @Test("C12: a dropped one-shot on a dispatch queue fires, then releases itself", .checksLeaks)
        func droppedOneShotReleasesItself() async throws {
            final class Payload: Sendable {}
            let watchedPayload: WatchedObject
            let fired = Counter()
            do {
                let payload = Payload()
                watchedPayload = watchForLeaks(payload)
                try ScheduledTimer.once(at: .after(.milliseconds(20)), delivery: .queue(.global())) { _, _ in
                    _ = payload
                    fired.increment()
                }
            }
            #expect(await eventually { fired.current == 1 })
            #expect(await eventually { watchedPayload.isReleased })
        }
    }
}

/// C12's one exception, made loud; and what a released virtual clock lets go.
@Suite("Lifetime warnings")
struct LifetimeWarningTests {
    @Test("C12: releasing a suspended timer with its last handle prints a debug-build warning; an invalidated one does not")
    func suspendedReleaseWarns() throws {
        #if DEBUG
        let warned = Recorder<ObjectIdentifier>()
        ScheduledTimer.lifetimeWarnings.withLock { $0 = { _, timer in warned.append(timer) } }
        defer { ScheduledTimer.lifetimeWarnings.withLock { $0 = nil } }
        let clock = VirtualClock()
        var suspended: ScheduledTimer? = try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock) { _, _ in }
        var invalidated: ScheduledTimer? = try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock) { _, _ in }
        let suspendedID = ObjectIdentifier(try #require(suspended))
        let invalidatedID = ObjectIdentifier(try #require(invalidated))
        suspended?.suspend()
        invalidated?.suspend()
        invalidated?.invalidate()
        suspended = nil
        invalidated = nil
        #expect(warned.all.contains(suspendedID))
        #expect(!warned.all.contains(invalidatedID))
        #endif
    }

    @Test("C8: releasing a virtual clock invalidates its pending timers and releases what they captured", .checksLeaks)
    func releasedVirtualClockReleasesItsTimers() throws {
        final class Captured: Sendable {}
        let watchedCaptured: WatchedObject
        var timer: ScheduledTimer?
        do {
            let clock = VirtualClock()
            let captured = Captured()
            watchedCaptured = watchForLeaks(captured)
            timer = try ScheduledTimer.repeating(every: .seconds(1), clock: clock.clock) { _, _ in _ = captured }
            clock.advance(by: .seconds(2))
        }
        #expect(watchedCaptured.isReleased)
        #expect(timer?.isValid == false)
    }
}
