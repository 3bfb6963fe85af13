import Dispatch
import Foundation
import Testing
import TimerKit
import TimerKitTesting

/// The keyed registry, exactly, on the virtual clock.
@Suite("Timer registry")
struct TimerRegistryTests {
    @Test("Work runs under its key; a one-shot's key is free again from the moment its run begins")
    func oneShotFreesItsKey() throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<String>(clock: virtual.clock)
        let runs = Recorder<(String, Bool)>()
        try registry.schedule("sms", at: .after(.seconds(1))) { key, _ in
            runs.append((key, registry.contains(key)))
        }
        #expect(registry.contains("sms") && registry.count == 1)
        virtual.advance(by: .seconds(1))
        #expect(runs.all.map(\.0) == ["sms"])
        #expect(runs.all.first?.1 == false, "free inside its own handler")
        #expect(registry.count == 0)
        #expect(registry.cancel("sms") == .notFound)
    }

    @Test("A one-shot's handler can schedule its own key again")
    func rescheduleFromTheHandler() throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<Int>(clock: virtual.clock)
        let runs = Counter()
        @Sendable func again(_ key: Int, _ fire: TimerFire) {
            if runs.increment() < 3 { _ = try? registry.schedule(key, at: .after(.seconds(1)), again) }
        }
        try registry.schedule(7, at: .after(.seconds(1)), again)
        virtual.advance(by: .seconds(10))
        #expect(runs.current == 3)
        #expect(registry.count == 0)
    }

    @Test("A second schedule under a live key replaces, keeps, or fails, as asked; replacing never double-fires")
    func conflicts() throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<String>(clock: virtual.clock)
        let runs = Recorder<String>()
        try registry.schedule("k", at: .after(.seconds(1))) { _, _ in runs.append("first") }
        #expect(try registry.schedule("k", at: .after(.seconds(2)), onConflict: .keep) { _, _ in runs.append("kept out") } == false)
        #expect(throws: TimerError.keyInUse("k")) {
            try registry.schedule("k", at: .after(.seconds(2)), onConflict: .fail) { _, _ in runs.append("failed") }
        }
        #expect(try registry.schedule("k", at: .after(.seconds(3))) { _, _ in runs.append("replacement") })
        virtual.advance(by: .seconds(5))
        #expect(runs.all == ["replacement"])
    }

    @Test("cancel() says whether the work was waiting, is running, or was not there")
    func cancelOutcomes() async throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<String>(clock: virtual.clock)
        try registry.schedule("waiting", at: .after(.seconds(1))) { _, _ in Issue.record("cancelled work ran") }
        #expect(registry.cancel("waiting") == .cancelled)
        #expect(registry.cancel("waiting") == .notFound)
        #expect(registry.cancel("never") == .notFound)

        // A run under way, on a queue of its own (real time, for the run to be under way).
        let queue = DispatchQueue(label: "registry.blocking")
        let started = Flag()
        let release = DispatchSemaphore(value: 0)
        let live = TimerRegistry<String>()
        try live.schedule("running", at: .now, delivery: .queue(queue)) { _, _ in
            started.set()
            release.wait()
        }
        try live.schedule("repeating", at: .now, every: .seconds(3_600), delivery: .queue(queue)) { _, _ in }
        #expect(await eventually { started.isSet })
        #expect(live.cancel("running") == .cancelledWhileRunning)
        release.signal()
        queue.sync {}
        #expect(live.cancel("running") == .notFound)
        #expect(live.cancel("repeating") == .cancelled)
        await virtual.advance(by: .seconds(2))
    }

    @Test("Deadlines move in place: reschedule to a new instant, or postpone by a delay; no cancel and recreate")
    func extendInPlace() throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<Int>(clock: virtual.clock)
        let fired = Recorder<TimerInstant>()
        try registry.schedule(1, at: .after(.seconds(30))) { _, fire in fired.append(fire.firedAt) }
        virtual.advance(by: .seconds(20))
        try registry.reschedule(1, at: .after(.seconds(30)))  // the connection sent a request
        virtual.advance(by: .seconds(20))
        try registry.postpone(1, by: .seconds(5))
        #expect(registry.entry(1)?.nextDeadline == TimerInstant(kind: .virtual, nanoseconds: 55_000_000_000))
        virtual.advance(by: .seconds(20))
        #expect(fired.all == [TimerInstant(kind: .virtual, nanoseconds: 55_000_000_000)])
        #expect(throws: TimerError.keyNotFound("1")) { try registry.reschedule(1, at: .now) }
    }

    @Test("C7, C9: suspend, resume and fire by key, each saying whether it took effect; suspend, resume and cancel everything")
    func operationsByKeyAndForAll() throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<String>(clock: virtual.clock)
        let runs = Recorder<String>()
        try registry.schedule("a", at: .after(.seconds(1)), every: .seconds(1)) { key, _ in runs.append(key) }
        try registry.schedule("b", at: .after(.seconds(1)), every: .seconds(1)) { key, _ in runs.append(key) }
        #expect(registry.suspend("a"))
        #expect(!registry.suspend("a"), "already suspended: the second call changes nothing and says so")
        #expect(!registry.resume("b"), "not suspended: nothing to resume")
        virtual.advance(by: .seconds(1))
        #expect(runs.all == ["b"])
        #expect(registry.fire("a"))
        #expect(runs.all == ["b", "a"])
        registry.suspendAll()
        virtual.advance(by: .seconds(3))
        #expect(runs.count == 2)
        #expect(registry.entries.allSatisfy { $0.isSuspended })
        registry.resumeAll()
        #expect(runs.count == 4, "each coalesces what it missed (C5)")
        #expect(registry.cancelAll() == 2)
        virtual.advance(by: .seconds(3))
        #expect(runs.count == 4 && registry.count == 0)
        #expect(!registry.suspend("a") && !registry.resume("a") && !registry.fire("a"))
    }

    @Test("Introspection lists each live key with its next deadline, interval and fire count")
    func introspection() throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<String>(clock: virtual.clock)
        try registry.schedule("poll", at: .after(.seconds(1)), every: .seconds(5)) { _, _ in }
        try registry.schedule("timeout", at: .after(.seconds(30))) { _, _ in }
        virtual.advance(by: .seconds(1))
        let entries = Dictionary(uniqueKeysWithValues: registry.entries.map { ($0.key, $0) })
        #expect(entries["poll"]?.interval == .seconds(5) && entries["poll"]?.fireCount == 1)
        #expect(entries["poll"]?.nextDeadline == TimerInstant(kind: .virtual, nanoseconds: 6_000_000_000))
        #expect(entries["timeout"]?.interval == nil && entries["timeout"]?.fireCount == 0)
        #expect(registry.count == 2)
    }

    @Test("C8: releasing the registry invalidates everything it holds")
    func releaseInvalidatesAll() throws {
        let virtual = VirtualClock()
        var registry: TimerRegistry<Int>? = TimerRegistry<Int>(clock: virtual.clock)
        let runs = Counter()
        for key in 0..<100 {
            try registry?.schedule(key, at: .after(.seconds(1)), every: .seconds(1)) { _, _ in runs.increment() }
        }
        #expect(virtual.pendingTimerCount == 100)
        registry = nil
        #expect(virtual.pendingTimerCount == 0)
        virtual.advance(by: .seconds(5))
        #expect(runs.current == 0)
    }

    @Test("C11: an object's registry, filled in init with owner-bound work, goes with the object — no invalidate() in deinit", .checksLeaks)
    func ownerKeepsItsRegistry() throws {
        final class Screen: Sendable {
            let timers: TimerRegistry<String>
            let ticks = Counter()

            init(clock: TimerClock) throws {
                timers = TimerRegistry(clock: clock)
                try timers.schedule(
                    "refresh", at: .after(.seconds(1)), every: .seconds(1),
                    .bound(to: self) { screen, _, _ in
                        screen.ticks.increment()
                    })
            }
        }
        let virtual = VirtualClock()
        var screen: Screen? = try Screen(clock: virtual.clock)
        let watchedScreen: WatchedObject
        watchedScreen = watchForLeaks(screen)
        virtual.advance(by: .seconds(3))
        #expect(screen?.ticks.current == 3)
        screen = nil
        #expect(watchedScreen.isReleased)
        #expect(virtual.pendingTimerCount == 0)
    }

    @Test("C8, C13: schedule, cancel, postpone and fire by key from eight threads at once keep one entry per key")
    func concurrentOperations() async throws {
        let registry = TimerRegistry<Int>()
        let done = DispatchGroup()
        for thread in 0..<8 {
            done.enter()
            Thread {
                var random = SeededRandom(seed: UInt64(thread))
                for _ in 0..<2_000 {
                    let key = Int.random(in: 0..<32, using: &random)
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: _ = try? registry.schedule(key, at: .after(.milliseconds(Int64.random(in: 1...50, using: &random)))) { _, _ in }
                    case 1: _ = registry.cancel(key)
                    case 2: try? registry.postpone(key, by: .milliseconds(1))
                    default: _ = registry.fire(key)
                    }
                }
                done.leave()
            }.start()
        }
        await withCheckedContinuation { continuation in done.notify(queue: DispatchQueue(label: "registry.done")) { continuation.resume() } }
        #expect(registry.count <= 32)
        #expect(registry.entries.count == registry.count)
        registry.cancelAll()
        #expect(registry.count == 0)
    }
}

extension RealTime {
    @Suite("Timer registry in real time")
    struct TimerRegistryRealTimeTests {
        @Test("A registry in real time runs its work once per key and frees one-shot keys")
        func registrySmoke() async throws {
            let registry = TimerRegistry<Int>()
            let runs = Counter()
            for key in 0..<50 { try registry.schedule(key, at: .after(.milliseconds(Int64(key)))) { _, _ in runs.increment() } }
            #expect(await eventually { runs.current == 50 && registry.count == 0 })
        }
    }
}
