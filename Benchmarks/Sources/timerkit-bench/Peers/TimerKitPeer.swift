import Dispatch
@_spi(Benchmarks) import TimerKit

/// TimerKit on the continuous clock (CLOCK_BOOTTIME on Linux) — the shared one that every API
/// defaults to; each scenario runs in a process of its own, so nothing else uses it — delivering on
/// the engine thread: the lowest-latency delivery. One-shots are `ScheduledCallback`s, TimerKit's
/// object-free one-shot; repeating timers are `ScheduledTimer`s. Its blockable context is a serial
/// queue.
final class TimerKitPeer: Peer {
    typealias OneShot = ScheduledCallback

    static let name = "timerkit"
    static let capabilities: Capabilities = [.oneShot, .oneShotTolerance, .anyThread, .repeating, .tolerance, .blockable, .manyRepeating]

    let clock = TimerClock.continuous
    let blockedQueue = DispatchQueue(label: "bench.timerkit.blocked")

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.boottime() }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> ScheduledCallback {
        try clock.schedule(at: TimerKitPeer.instant(deadline)) { log.fired(id, at: KernelClock.boottime()) }
    }

    func schedule(at deadline: Int64, tolerance: Int64, id: Int, log: FireLog) throws -> ScheduledCallback {
        try clock.schedule(at: TimerKitPeer.instant(deadline), tolerance: .nanoseconds(tolerance)) { log.fired(id, at: KernelClock.boottime()) }
    }

    func cancel(_ callback: ScheduledCallback) { callback.cancel() }

    static var resetMethod: String { "`reschedule(at:)` in place" }

    func reset(_ callback: ScheduledCallback, to deadline: Int64, id: Int, log: FireLog) throws -> ScheduledCallback {
        if try callback.reschedule(at: TimerKitPeer.instant(deadline)) { return callback }
        return try schedule(at: deadline, id: id, log: log)
    }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        try clock.schedule(at: TimerKitPeer.instant(deadline), delivery: self.delivery(delivery), work)
    }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        try Self.repeating(
            first: first, interval: interval, tolerance: tolerance, precision: .standard, clock: clock, delivery: self.delivery(delivery), handler)
    }

    /// A `FrameClock`: each tick reports its frame's timestamp and the frames it stands for.
    func frames(framesPerSecond: Int, _ handler: @escaping @Sendable (Tick) -> Void) throws -> Repeater {
        try Self.frames(framesPerSecond: framesPerSecond, precision: .standard, clock: clock, handler)
    }

    /// A `ScheduledTimer` on the grid `first + k·interval`, reporting each fire as a tick (shared
    /// with ``TimerKitPrecisePeer``).
    static func repeating(
        first: Int64, interval: Int64, tolerance: Int64, precision: TimerPrecision, clock: TimerClock, delivery: TimerDelivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let timer = try ScheduledTimer.repeating(
            every: .nanoseconds(interval), first: instant(first), tolerance: .nanoseconds(tolerance), precision: precision,
            clock: clock, delivery: delivery
        ) { _, fire in
            let now = KernelClock.boottime()
            handler(Tick(now: now, scheduled: fire.scheduledDeadline.nanoseconds, count: fire.deadlineCount))
        }
        return Repeater { timer.invalidate() }
    }

    /// A `FrameClock` whose ticks report their frame's timestamp and the frames they stand for
    /// (shared with ``TimerKitPrecisePeer``).
    static func frames(
        framesPerSecond: Int, precision: TimerPrecision, clock: TimerClock, _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let frames = try FrameClock.start(framesPerSecond: framesPerSecond, precision: precision, clock: clock) { _, frame in
            let now = KernelClock.boottime()
            handler(Tick(now: now, scheduled: frame.timestamp.nanoseconds, count: frame.droppedSinceLast + 1))
        }
        return Repeater { frames.invalidate() }
    }

    func wakeUpCount() -> Int? { clock.wakeUpCount }

    private func delivery(_ delivery: Delivery) -> TimerDelivery {
        switch delivery {
        case .standard: .engineThread
        case .blockable: .queue(blockedQueue)
        }
    }

    static func instant(_ nanoseconds: Int64) -> TimerStart {
        .at(TimerInstant(kind: .continuous, nanoseconds: nanoseconds))
    }
}

/// TimerKit's one-shot callbacks on an engine whose store is the heap alone (the timing wheel
/// off): the race that chose the wheel as the default.
final class TimerKitHeapPeer: Peer {
    typealias OneShot = ScheduledCallback

    static let name = "timerkit-heap"
    static let capabilities: Capabilities = [.oneShot, .anyThread]
    static let isVariant = true
    static let limitations =
        "timerkit-heap, timerkit-timer: churn and scale only (variants of TimerKit's one-shots; its repeating timers are the timerkit rows)"

    let clock = TimerClock._dedicatedHeapOnly(.continuous)

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.boottime() }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> ScheduledCallback {
        try clock.schedule(at: TimerKitPeer.instant(deadline)) { log.fired(id, at: KernelClock.boottime()) }
    }

    func cancel(_ callback: ScheduledCallback) { callback.cancel() }
}

/// TimerKit's one-shots as `ScheduledTimer` objects (`ScheduledTimer.once`): what the full timer —
/// suspend, resume, reschedule, `fire()` — costs over the callback.
final class TimerKitTimerPeer: Peer {
    static var resetMethod: String { "`reschedule(at:)` in place" }

    typealias OneShot = ScheduledTimer

    static let name = "timerkit-timer"
    static let capabilities: Capabilities = [.oneShot, .oneShotTolerance, .anyThread]
    static let isVariant = true

    let clock = TimerClock.dedicated(.continuous)

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.boottime() }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> ScheduledTimer {
        try ScheduledTimer.once(at: TimerKitPeer.instant(deadline), clock: clock) { _, _ in
            log.fired(id, at: KernelClock.boottime())
        }
    }

    func schedule(at deadline: Int64, tolerance: Int64, id: Int, log: FireLog) throws -> ScheduledTimer {
        try ScheduledTimer.once(at: TimerKitPeer.instant(deadline), tolerance: .nanoseconds(tolerance), clock: clock) { _, _ in
            log.fired(id, at: KernelClock.boottime())
        }
    }

    func cancel(_ timer: ScheduledTimer) { timer.invalidate() }

    /// In place (C10): the same timer, a new deadline.
    func reset(_ timer: ScheduledTimer, to deadline: Int64, id: Int, log: FireLog) throws -> ScheduledTimer {
        try timer.reschedule(at: TimerKitPeer.instant(deadline))
        return timer
    }
}

/// TimerKit's `TimerRegistry<Int>`: one-shots under integer keys, cancelled and reset by key (the
/// LCTimer scene, and a server's timeouts by connection id). Its handles are the keys.
final class TimerKitRegistryPeer: Peer {
    static var resetMethod: String { "`reschedule(key, at:)` in place" }

    typealias OneShot = Int

    static let name = "timerkit-registry"
    static let capabilities: Capabilities = [.oneShot, .anyThread]
    static let isVariant = true
    static let limitations = "timerkit-registry: one-shots by key only (churn, scale, reset)"

    let registry = TimerRegistry<Int>(clock: .dedicated(.continuous))

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.boottime() }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> Int {
        try registry.schedule(id, at: TimerKitPeer.instant(deadline)) { _, _ in log.fired(id, at: KernelClock.boottime()) }
        return id
    }

    func cancel(_ key: Int) { registry.cancel(key) }

    /// In place, by key.
    func reset(_ key: Int, to deadline: Int64, id: Int, log: FireLog) throws -> Int {
        try registry.reschedule(key, at: TimerKitPeer.instant(deadline))
        return key
    }
}
