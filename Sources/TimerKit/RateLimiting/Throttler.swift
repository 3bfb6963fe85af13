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
    private let handler: TimerHandler<Throttler, Value>
    private let storage: RateLimiterStorage<ThrottleStateMachine<Value>>

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
        self.handler = handler
        let machine = ThrottleStateMachine<Value>(leading: leading, trailing: trailing, latest: latest)
        self.storage = RateLimiterStorage(machine, clock: clock, delivery: try handler.delivery(delivery, otherwise: .engineThread))
    }

    /// The options checked as the initializers check them (also by `throttled(for:)`, before the
    /// first element): the interval in nanoseconds.
    static func validated(interval: Duration, leading: Bool, trailing: Bool) throws(TimerError) -> Int64 {
        guard leading || trailing else { throw .noThrottleEdge }
        return try TimerClock.validatedInterval(interval)
    }

    /// Whether a value waits for the end of the window.
    public var isPending: Bool { storage.read { $0.pending != nil } }

    /// Sends a value: runs it at once if it opens a window (with `leading`), keeps it for the
    /// window's end (with `trailing`), or drops it.
    ///
    /// - Throws: ``TimerError/clockShutDown`` when the clock was shut down.
    public func send(_ value: Value) throws(TimerError) {
        let sent = storage.decide(replacingEdge: false) { $0.send(value) }
        if let runNow = sent.runNow { try run(runNow) }
        if let window = sent.openedWindow { try timeEnd(ofWindow: window) }
    }

    /// Runs the waiting value now (through the delivery) and ends the window; `false` if nothing
    /// was waiting.
    @discardableResult
    public func flush() throws(TimerError) -> Bool {
        guard let value = storage.decide(replacingEdge: true, { $0.closeWindow() }) else { return false }
        try run(value)
        return true
    }

    /// Drops the waiting value and ends the window (C8: once this returns, no trailing edge of it
    /// begins). Returns whether a value was dropped.
    @discardableResult
    public func cancel() -> Bool {
        storage.decide(replacingEdge: true) { $0.closeWindow() } != nil
    }

    // MARK: Windows

    /// Schedules the end of window `generation`, unless it was closed meanwhile.
    private func timeEnd(ofWindow generation: UInt64) throws(TimerError) {
        let deadline = clock.nanosecondsNow.addingSaturating(intervalNanoseconds)
        try storage.scheduleEdge(at: deadline, generation: generation) { [weak self] in
            self?.edgeTimerExpired(generation)
        }
    }

    /// The end of window `generation`, on the delivery: a waiting value opens the next window and
    /// runs; otherwise the throttler goes idle.
    private func edgeTimerExpired(_ generation: UInt64) {
        guard case .run(let value, let next) = storage.edgeExpired(generation: generation, { $0.edgeTimerExpired(generation) }) else { return }
        // The next window starts with this run; a shut-down clock leaves it without an end, as
        // nothing can run any more.
        try? timeEnd(ofWindow: next)
        handler(self, value) { cancel() }
    }

    /// Runs the action with `value` through the delivery, at once.
    private func run(_ value: Value) throws(TimerError) {
        try storage.runNow { self.handler(self, value) { self.cancel() } }
    }
}
