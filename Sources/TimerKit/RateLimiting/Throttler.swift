/// Runs an action at most once per interval however often values come: the scroll handler that
/// updates at most ten times a second, the progress bar that redraws at most once per frame.
///
/// ```swift
/// let progress = try Throttler<Double>(interval: .milliseconds(100)) { fraction in redraw(fraction) }
/// for chunk in download { progress.send(chunk.fraction) }   // redraws at once, then at most every 100 ms
/// ```
///
/// A *window* opens with a value sent while none is open and lasts `interval`. Then:
///
/// | option | the action runs with |
/// |---|---|
/// | `leading: true` (default) | the value that opened the window, at once |
/// | `trailing: true` (default) | a value sent during the window, when the window ends — the latest (`latest: true`, the default) or the first (`latest: false`) |
/// | both (the default) | both: at once, and at the end if more came |
///
/// A trailing run opens the next window, so runs stay at least `interval` apart under a steady
/// stream — lodash's `throttle`, and Combine's `throttle(for:scheduler:latest:)`. Unlike
/// swift-async-algorithms' `_throttle` (whose bugs kept it out of 1.0), the first value always
/// runs at once, and a value waiting at the end of a window runs then, not when another value
/// arrives.
///
/// The action runs on the delivery (the engine thread by default), never two at once on a serial
/// target, in the order of the edges; the leading edge and ``flush()`` go through the engine too,
/// so on a virtual clock they run when it is next advanced. ``cancel()`` drops a waiting value and
/// ends the window; ``flush()`` runs it now; ``isPending`` tells whether one waits. Every operation
/// is O(1) and safe from any thread (C13); a released throttler drops what it held.
public final class Throttler<Value: Sendable>: Sendable {
    private struct State {
        /// The value the window's end will run with.
        var pending: Value?
        /// Whether a window is open.
        var isOpen = false
        /// The timer of the window's end.
        var timer: ScheduledCallback?
        /// Counts the windows: an expiry of an older one is stale.
        var generation: UInt64 = 0
    }

    /// The shortest time between two runs.
    public let interval: Duration
    /// Whether a value that opens a window runs at once.
    public let leading: Bool
    /// Whether a value sent during a window runs when it ends.
    public let trailing: Bool
    /// Whether the window's end runs the latest value sent during it (`true`) or the first.
    public let latest: Bool
    /// The clock the interval is counted on.
    public let clock: TimerClock

    private let intervalNanoseconds: Int64
    private let delivery: TimerDelivery
    private let handler: TimerHandler<Throttler, Value>
    private let state = Locked(State())

    /// Creates a throttler that runs a closure.
    ///
    /// - Parameters:
    ///   - interval: The shortest time between two runs; positive.
    ///   - leading: Run the value that opens a window at once; `true` by default.
    ///   - trailing: Run a value sent during a window when it ends; `true` by default.
    ///   - latest: At a window's end, run the latest value sent during it (the default), or the
    ///     first.
    ///   - clock: The clock the interval is counted on; continuous by default.
    ///   - delivery: Where the action runs (C15); the engine thread by default.
    ///   - action: Called with a value at each edge.
    /// - Throws: ``TimerError/nonPositiveInterval(_:)`` for a zero or negative interval;
    ///   ``TimerError/noThrottleEdge`` when both edges are off; ``TimerError/durationOverflow``.
    public convenience init(
        interval: Duration, leading: Bool = true, trailing: Bool = true, latest: Bool = true,
        clock: TimerClock = .continuous, delivery: TimerDelivery = .engineThread,
        _ action: @escaping @Sendable (Value) -> Void
    ) throws(TimerError) {
        try self.init(
            interval: interval, leading: leading, trailing: trailing, latest: latest, clock: clock, delivery: delivery,
            TimerHandler { _, value in action(value) })
    }

    /// Creates a throttler whose action is a ``TimerHandler``: bound to an owner held weakly (C11),
    /// on the main actor (C15), or both. Once an owner is gone, the throttler drops what it holds
    /// at its next edge. `delivery` defaults to the engine thread, or the main queue for a
    /// main-actor handler.
    ///
    /// - Throws: The errors of the closure form, and ``TimerError/conflictingDelivery(_:)`` for a
    ///   main-actor handler given a delivery other than the main queue.
    public init(
        interval: Duration, leading: Bool = true, trailing: Bool = true, latest: Bool = true,
        clock: TimerClock = .continuous, delivery: TimerDelivery? = nil,
        _ handler: TimerHandler<Throttler, Value>
    ) throws(TimerError) {
        intervalNanoseconds = try Self.validated(interval: interval, leading: leading, trailing: trailing)
        self.interval = interval
        self.leading = leading
        self.trailing = trailing
        self.latest = latest
        self.clock = clock
        self.delivery = try handler.delivery(delivery, otherwise: .engineThread)
        self.handler = handler
    }

    deinit {
        _ = state.withLock { $0.timer }?.cancel()
    }

    /// The options checked as the initializers check them (also by `throttled(for:)`, before the
    /// first element): the interval in nanoseconds.
    static func validated(interval: Duration, leading: Bool, trailing: Bool) throws(TimerError) -> Int64 {
        guard leading || trailing else { throw .noThrottleEdge }
        return try TimerClock.validatedInterval(interval)
    }

    /// Whether a value waits for the end of the window.
    public var isPending: Bool { state.withLock { $0.pending != nil } }

    /// Sends a value: runs it at once if it opens a window (with `leading`), keeps it for the
    /// window's end (with `trailing`), or drops it.
    ///
    /// - Throws: ``TimerError/clockShutDown`` when the clock was shut down.
    public func send(_ value: Value) throws(TimerError) {
        let (runNow, generation) = state.withLock { state -> (Value?, UInt64?) in
            if state.isOpen {
                if trailing && (latest || state.pending == nil) { state.pending = value }
                return (nil, nil)
            }
            state.isOpen = true
            state.generation &+= 1
            if leading { return (value, state.generation) }
            state.pending = value
            return (nil, state.generation)
        }
        if let runNow { try run(runNow) }
        if let generation { try openWindow(generation) }
    }

    /// Runs the waiting value now (through the delivery) and ends the window; `false` if nothing
    /// was waiting.
    @discardableResult
    public func flush() throws(TimerError) -> Bool {
        let (value, timer) = closeWindow()
        timer?.cancel()
        guard let value else { return false }
        try run(value)
        return true
    }

    /// Drops the waiting value and ends the window (C8: once this returns, no trailing edge of it
    /// begins). Returns whether a value was dropped.
    @discardableResult
    public func cancel() -> Bool {
        let (value, timer) = closeWindow()
        timer?.cancel()
        return value != nil
    }

    // MARK: Windows

    /// Schedules the end of window `generation`, unless it was closed meanwhile.
    private func openWindow(_ generation: UInt64) throws(TimerError) {
        let deadline = clock.nanosecondsNow.addingSaturating(intervalNanoseconds)
        let timer = try clock.schedule(at: .at(TimerInstant(kind: clock.kind, nanoseconds: deadline)), delivery: delivery) { [weak self] in
            self?.windowEnded(generation)
        }
        let current = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.timer = timer
            return true
        }
        if !current { timer.cancel() }
    }

    private func closeWindow() -> (Value?, ScheduledCallback?) {
        state.withLock { state in
            defer {
                state.pending = nil
                state.isOpen = false
                state.timer = nil
                state.generation &+= 1
            }
            return (state.pending, state.timer)
        }
    }

    /// The end of window `generation`, on the delivery: a waiting value opens the next window and
    /// runs; otherwise the throttler goes idle.
    private func windowEnded(_ generation: UInt64) {
        let next = state.withLock { state -> (Value, UInt64)? in
            guard state.generation == generation else { return nil }
            state.timer = nil
            guard let value = state.pending else {
                state.isOpen = false
                return nil
            }
            state.pending = nil
            state.generation &+= 1
            return (value, state.generation)
        }
        guard let (value, generation) = next else { return }
        // The next window starts with this run; a shut-down clock leaves it without an end, as
        // nothing can run any more.
        try? openWindow(generation)
        handler(self, value) { cancel() }
    }

    /// Runs the action with `value` through the delivery, at once.
    private func run(_ value: Value) throws(TimerError) {
        try clock.schedule(at: .now, delivery: delivery) { self.handler(self, value) { self.cancel() } }
    }
}
