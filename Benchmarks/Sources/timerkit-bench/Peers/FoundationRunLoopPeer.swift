import Dispatch
import Foundation

/// `Foundation.Timer` scheduled on a dedicated `Thread` that runs its `RunLoop` (CFRunLoop, armed
/// by a timerfd on CLOCK_MONOTONIC). Timers take a `Date`, so each deadline is converted from
/// CLOCK_MONOTONIC at scheduling time (a conversion error well under a microsecond).
///
/// Timers are created, added and invalidated on the run loop's own thread, as Foundation asks
/// (`invalidate()` must come from the thread the timer was installed on).
final class FoundationRunLoopPeer: Peer {
    static var resetMethod: String { "`fireDate` in place" }

    typealias OneShot = Timer

    static let name = "foundation-runloop"
    static let capabilities: Capabilities = [.oneShot, .repeating, .tolerance, .blockable, .manyRepeating]

    let loop = RunLoopThread(name: "bench.runloop")
    /// The blockable context: a second run-loop thread.
    private let blockedLoopStorage = LazyBox<RunLoopThread> { RunLoopThread(name: "bench.runloop2") }

    init() {}

    @inline(__always) func now() -> Int64 { KernelClock.monotonic() }

    func thread(_ delivery: Delivery) -> RunLoopThread {
        switch delivery {
        case .standard: loop
        case .blockable: blockedLoopStorage.value
        }
    }

    /// The `Date` of a CLOCK_MONOTONIC instant.
    static func date(_ deadline: Int64) -> Date {
        Date(timeIntervalSinceNow: Double(deadline - KernelClock.monotonic()) / 1e9)
    }

    func schedule(at deadline: Int64, id: Int, log: FireLog) throws -> Timer {
        let timer = Timer(fire: Self.date(deadline), interval: 0, repeats: false) { _ in
            log.fired(id, at: KernelClock.monotonic())
        }
        // CFRunLoopAddTimer is thread-safe: scale schedules from the main thread, churn on the run
        // loop's own (where it must cancel).
        loop.add(timer)
        return timer
    }

    func cancel(_ timer: Timer) { timer.invalidate() }

    /// In place: a new `fireDate` (on the run loop's thread, where reset runs).
    func reset(_ timer: Timer, to deadline: Int64, id: Int, log: FireLog) throws -> Timer {
        timer.fireDate = Self.date(deadline)
        return timer
    }

    func onSchedulingThread(_ body: @escaping @Sendable () -> Void) { loop.sync(body) }

    func perform(at deadline: Int64, on delivery: Delivery, _ work: @escaping @Sendable () -> Void) throws {
        let thread = thread(delivery)
        thread.sync {
            RunLoop.current.add(Timer(fire: Self.date(deadline), interval: 0, repeats: false) { _ in work() }, forMode: .default)
        }
    }

    func repeating(
        first: Int64, interval: Int64, tolerance: Int64, delivery: Delivery,
        _ handler: @escaping @Sendable (Tick) -> Void
    ) throws -> Repeater {
        let thread = thread(delivery)
        let timer = Timer(fire: Self.date(first), interval: Double(interval) / 1e9, repeats: true) { _ in
            handler(Tick(now: KernelClock.monotonic()))
        }
        timer.tolerance = Double(tolerance) / 1e9
        thread.add(timer)
        let box = LazyBox<Timer> { timer }
        return Repeater { thread.async { box.value.invalidate() } }
    }
}

/// A thread running its run loop for ever.
final class RunLoopThread: @unchecked Sendable {
    private var runLoop: RunLoop?

    init(name: String) {
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [unowned(unsafe) self] in
            self.runLoop = RunLoop.current
            // A run loop with no source returns at once: keep one far-future timer in it.
            RunLoop.current.add(Timer(timeInterval: 1e9, repeats: true) { _ in }, forMode: .default)
            ready.signal()
            while true { _ = RunLoop.current.run(mode: .default, before: .distantFuture) }
        }
        thread.name = name
        thread.start()
        ready.wait()
    }

    /// Adds a timer to the run loop (from any thread).
    func add(_ timer: Timer) { runLoop!.add(timer, forMode: .default) }

    /// Runs `body` on the run-loop thread, soon, in a timer callout.
    func async(_ body: @escaping @Sendable () -> Void) {
        runLoop!.add(Timer(fire: Date.distantPast, interval: 0, repeats: false) { _ in body() }, forMode: .default)
    }

    /// Runs `body` on the run-loop thread and waits for it.
    func sync(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        async {
            body()
            done.signal()
        }
        done.wait()
    }
}

/// A lazily made, lock-protected value.
final class LazyBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?
    private let make: () -> Value

    init(_ make: @escaping () -> Value) { self.make = make }

    var value: Value {
        lock.lock()
        defer { lock.unlock() }
        if let stored { return stored }
        let made = make()
        stored = made
        return made
    }

    func set(_ value: Value) {
        lock.lock()
        stored = value
        lock.unlock()
    }
}
