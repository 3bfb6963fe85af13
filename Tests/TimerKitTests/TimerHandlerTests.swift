import Dispatch
import Testing
import TimerKit
import TimerKitTesting

/// The one handler shape every tool takes (``TimerHandler``): plain, bound to an owner, on the main
/// actor, or both.
struct TimerHandlerTests {
    final class Owner: Sendable {
        let events = Recorder<String>()
    }

    @Test("C11: every tool ends at its next event once the owner of a bound handler is gone, without calling it", .checksLeaks)
    func everyToolEndsWithItsOwner() throws {
        let virtual = VirtualClock()
        var owner: Owner? = Owner()
        let watchedOwner: WatchedObject
        watchedOwner = watchForLeaks(owner)
        let events = owner!.events
        let timer = try ScheduledTimer.repeating(
            every: .seconds(1), clock: virtual.clock,
            .bound(to: owner!) { owner, _, _ in
                owner.events.append("timer")
            })
        let countdown = try Countdown.start(
            to: .after(.seconds(10)), clock: virtual.clock,
            .bound(to: owner!) { owner, _, tick in
                owner.events.append("countdown \(tick.value)")
            })
        let frames = try FrameClock.start(
            framesPerSecond: 1, clock: virtual.clock,
            .bound(to: owner!) { owner, _, frame in
                owner.events.append("frame \(frame.index)")
            })
        let registry = TimerRegistry<String>(clock: virtual.clock)
        try registry.schedule(
            "poll", at: .after(.seconds(1)), every: .seconds(1),
            .bound(to: owner!) { owner, key, _ in
                owner.events.append(key)
            })
        let debouncer = try Debouncer<Int>(
            delay: .milliseconds(500), clock: virtual.clock,
            .bound(to: owner!) { owner, _, value in
                owner.events.append("debounced \(value)")
            })
        try debouncer.send(1)
        virtual.advance(by: .seconds(1))
        #expect(events.all.sorted() == ["countdown 10", "countdown 9", "debounced 1", "frame 1", "poll", "timer"])

        try debouncer.send(2)
        owner = nil
        #expect(watchedOwner.isReleased, "no tool keeps the owner alive")
        virtual.advance(by: .seconds(1))
        #expect(events.count == 6, "no handler ran after the owner went")
        #expect(!timer.isValid)
        #expect(countdown.isFinished, "cancelled: a countdown that ends without its final tick reads finished")
        #expect(!frames.isValid)
        #expect(!registry.contains("poll"))
        #expect(!debouncer.isPending)
    }

    @Test("C11: a registry entry whose owner is gone cancels only itself, never a newer entry under the same key")
    func ownerlessRegistryEntryLeavesNewerEntry() throws {
        let virtual = VirtualClock()
        let registry = TimerRegistry<String>(clock: virtual.clock)
        var owner: Owner? = Owner()
        try registry.schedule(
            "job", at: .after(.seconds(1)), every: .seconds(1),
            .bound(to: owner!) { owner, key, _ in
                owner.events.append(key)
            })
        let runs = Counter()
        owner = nil
        // The owner's entry is due at 1 s, the newer one at 2 s; the old one must not take the key
        // with it when it finds its owner gone.
        try registry.schedule("job", at: .after(.seconds(2)), every: .seconds(1), onConflict: .keep) { _, _ in runs.increment() }
        virtual.advance(by: .seconds(1))
        #expect(!registry.contains("job"), "the ownerless entry removed itself")
        try registry.schedule("job", at: .after(.seconds(1)), every: .seconds(1)) { _, _ in runs.increment() }
        virtual.advance(by: .seconds(3))
        #expect(runs.current == 3)
        #expect(registry.contains("job"))
    }

    @Test("C15: a main-actor handler given a delivery other than the main queue is refused by every tool")
    func mainActorHandlerRefusesOtherDelivery() throws {
        let virtual = VirtualClock()
        let queue = DispatchQueue(label: "elsewhere")
        let expected = TimerError.conflictingDelivery(.queue(queue))
        #expect(throws: expected) {
            try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, delivery: .queue(queue), .onMainActor { _, _ in })
        }
        #expect(throws: expected) {
            try ScheduledTimer.once(at: .after(.seconds(1)), clock: virtual.clock, delivery: .queue(queue), .onMainActor { _, _ in })
        }
        #expect(throws: expected) {
            try Countdown.start(to: .after(.seconds(3)), clock: virtual.clock, delivery: .queue(queue), .onMainActor { _, _ in })
        }
        #expect(throws: expected) {
            try FrameClock.start(clock: virtual.clock, delivery: .queue(queue), .onMainActor { _, _ in })
        }
        #expect(throws: expected) {
            try TimerRegistry<Int>(clock: virtual.clock).schedule(1, at: .now, delivery: .queue(queue), .onMainActor { _, _ in })
        }
        #expect(throws: expected) {
            try Debouncer<Int>(delay: .seconds(1), clock: virtual.clock, delivery: .queue(queue), .onMainActor { _, _ in })
        }
        #expect(throws: TimerError.conflictingDelivery(.engineThread)) {
            try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, delivery: .engineThread, .onMainActor { _, _ in })
        }
        #expect(expected.description.contains("main-actor handler"))
    }

    @Test("C15: a main-actor handler with the main queue named explicitly is accepted")
    func mainActorHandlerAcceptsMainQueue() throws {
        let virtual = VirtualClock()
        let timer = try ScheduledTimer.once(at: .after(.seconds(1)), clock: virtual.clock, delivery: .queue(.main), .onMainActor { _, _ in })
        #expect(timer.delivery == .queue(.main))
        timer.invalidate()
    }

    @Test("C15: main-actor handlers default to the main queue, other handlers to the engine thread or the registry's delivery")
    func defaultDeliveries() throws {
        let virtual = VirtualClock()
        let mainTimer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, .onMainActor { _, _ in })
        let boundTimer = try ScheduledTimer.repeating(every: .seconds(1), clock: virtual.clock, .bound(to: Owner()) { _, _, _ in })
        #expect(mainTimer.delivery == .queue(.main))
        #expect(boundTimer.delivery == .engineThread)
        mainTimer.invalidate()
        boundTimer.invalidate()
    }

    @MainActor
    final class ViewModel {
        var ticks: [Int64] = []
        var frames = 0
        var queries: [String] = []
        var keys: [String] = []
    }

    @MainActor
    @Test("C15: main-actor handlers of a countdown, a frame clock, a registry and a debouncer run on the main actor")
    func mainActorHandlersRunOnTheMainActor() async throws {
        let model = ViewModel()
        let countdown = try Countdown.start(
            to: .after(.milliseconds(30)), unit: .milliseconds(10),
            .onMainActor(bound: model) { model, _, tick in
                MainActor.assertIsolated()
                model.ticks.append(tick.value)
            })
        let frames = try FrameClock.start(
            framesPerSecond: 100,
            .onMainActor(bound: model) { model, _, _ in
                MainActor.assertIsolated()
                model.frames += 1
            })
        let registry = TimerRegistry<String>()
        try registry.schedule(
            "refresh", at: .after(.milliseconds(10)),
            .onMainActor(bound: model) { model, key, _ in
                MainActor.assertIsolated()
                model.keys.append(key)
            })
        let search = try Debouncer<String>(
            delay: .milliseconds(20),
            .onMainActor(bound: model) { model, _, query in
                MainActor.assertIsolated()
                model.queries.append(query)
            })
        try search.send("s")
        try search.send("swift")
        // The debouncer delivers the last value: a machine that stalled between the two sends for
        // longer than the delay delivers "s" first, as a debouncer should.
        #expect(await eventually { model.ticks.last == 0 && model.frames >= 3 && model.keys == ["refresh"] && model.queries.last == "swift" })
        // In real time a late tick shows the value of its moment, so a loaded machine may skip a
        // value or show one again after a stall: the values never rise, and the last is the final 0.
        #expect(zip(model.ticks, model.ticks.dropFirst()).allSatisfy { $0 >= $1 })
        #expect(model.ticks.first ?? 0 <= 3)
        #expect(countdown.isFinished)
        frames.invalidate()
    }
}
