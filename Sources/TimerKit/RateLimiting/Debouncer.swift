/// Runs an action once a burst of values has settled: the search box that queries after the user
/// stops typing, with every option spelled out.
///
/// ```swift
/// let search = try Debouncer<String>(delay: .milliseconds(300)) { query in run(query) }
/// try search.send("s"); try search.send("sw"); try search.send("swift")   // one run, with "swift", 300 ms after the last
/// ```
///
/// A *burst* starts with a value sent while nothing is pending and lasts until `delay` has passed
/// without a new value — or, with `maxWait`, until `maxWait` after the burst began, whichever is
/// first (lodash's `maxWait`: under a steady stream of values, the action still runs at least that
/// often). Then:
///
/// | option | the action runs with |
/// |---|---|
/// | `trailing: true` (default) | the burst's latest value, at its end (Combine's `debounce`, Rx's `debounceTime`) |
/// | `leading: true` | the burst's first value, at once (Rx's `throttleTime` with `leading`) |
/// | both | the first value at once, and the latest at the end if more came after the first |
///
/// The action runs on `delivery` (the engine thread by default), never two at once on a serial
/// target, always in the order of the values' edges; the leading edge and ``flush()`` go through
/// the engine too, so on a virtual clock they run when it is next advanced (`advance(by: .zero)`).
/// ``cancel()`` drops a pending value; ``flush()`` runs it now; ``isPending`` tells whether one
/// waits. Every operation is O(1) and safe from any thread (C13); a released debouncer drops what
/// it held.
public final class Debouncer<Value: Sendable>: Sendable {
    private struct State {
        /// The value the trailing edge will run with.
        var pending: Value?
        /// When the current burst began; `nil` between bursts.
        var burstStart: Int64?
        /// The timer of the burst's end.
        var timer: ScheduledCallback?
        /// Counts the timers made: an expiry of an older one is stale.
        var generation: UInt64 = 0
    }

    /// How long the values must settle before the trailing edge.
    public let delay: Duration
    /// The longest a burst may last, if limited.
    public let maxWait: Duration?
    /// Whether the first value of a burst runs at once.
    public let leading: Bool
    /// Whether the latest value runs when the burst ends.
    public let trailing: Bool
    /// The clock the delay is counted on.
    public let clock: TimerClock

    private let delayNanoseconds: Int64
    private let maxWaitNanoseconds: Int64?
    private let delivery: TimerDelivery
    private let handler: TimerHandler<Debouncer, Value>
    private let state = Locked(State())

    /// Creates a debouncer that runs a closure.
    ///
    /// - Parameters:
    ///   - delay: How long the values must settle; not negative.
    ///   - leading: Run the first value of a burst at once; `false` by default.
    ///   - trailing: Run the latest value when the burst ends; `true` by default.
    ///   - maxWait: End a burst at the latest this long after it began; at least `delay` (a shorter
    ///     one counts as `delay`, as in lodash). `nil`: no limit.
    ///   - clock: The clock the delay is counted on; continuous by default.
    ///   - delivery: Where the action runs (C15); the engine thread by default.
    ///   - action: Called with a value at each edge.
    /// - Throws: ``TimerError/noDebounceEdge`` when both edges are off;
    ///   ``TimerError/negativeTolerance(_:)`` for a negative delay or `maxWait`;
    ///   ``TimerError/durationOverflow``.
    public convenience init(
        delay: Duration, leading: Bool = false, trailing: Bool = true, maxWait: Duration? = nil,
        clock: TimerClock = .continuous, delivery: TimerDelivery = .engineThread,
        _ action: @escaping @Sendable (Value) -> Void
    ) throws(TimerError) {
        try self.init(
            delay: delay, leading: leading, trailing: trailing, maxWait: maxWait, clock: clock, delivery: delivery,
            TimerHandler { _, value in action(value) })
    }

    /// Creates a debouncer whose action is a ``TimerHandler``: bound to an owner held weakly (C11),
    /// on the main actor (C15), or both — the search box of a view model:
    ///
    /// ```swift
    /// @MainActor final class SearchViewModel {
    ///     private(set) var results: [Item] = []
    ///     private var search: Debouncer<String>?
    ///     init() throws {
    ///         search = try Debouncer(delay: .milliseconds(300), .onMainActor(bound: self) { model, _, query in
    ///             model.results = model.index.matches(query)
    ///         })
    ///     }
    ///     func queryChanged(_ query: String) throws { try search?.send(query) }
    /// }
    /// ```
    ///
    /// Once an owner is gone, the debouncer drops what it holds at its next edge. The parameters
    /// mean what they mean for the closure form; `delivery` defaults to the engine thread, or the
    /// main queue for a main-actor handler.
    /// - Throws: The errors of the closure form, and ``TimerError/conflictingDelivery(_:)`` for a
    ///   main-actor handler given a delivery other than the main queue.
    public init(
        delay: Duration, leading: Bool = false, trailing: Bool = true, maxWait: Duration? = nil,
        clock: TimerClock = .continuous, delivery: TimerDelivery? = nil,
        _ handler: TimerHandler<Debouncer, Value>
    ) throws(TimerError) {
        (delayNanoseconds, maxWaitNanoseconds) = try Self.validated(delay: delay, leading: leading, trailing: trailing, maxWait: maxWait)
        self.delay = delay
        self.maxWait = maxWait
        self.leading = leading
        self.trailing = trailing
        self.clock = clock
        self.delivery = try handler.delivery(delivery, otherwise: .engineThread)
        self.handler = handler
    }

    deinit {
        _ = state.withLock { $0.timer }?.cancel()
    }

    /// The options checked as ``init(delay:leading:trailing:maxWait:clock:delivery:_:)-(_,_,_,_,_,_,(Value)->Void)``
    /// checks them (also by `debounced(for:)`, before the first element): the delay and the
    /// longest wait in nanoseconds.
    static func validated(delay: Duration, leading: Bool, trailing: Bool, maxWait: Duration?) throws(TimerError) -> (Int64, Int64?) {
        guard leading || trailing else { throw .noDebounceEdge }
        let delayNanoseconds = try TimerClock.validatedDelay(delay)
        let maxWaitNanoseconds = try maxWait.map { (wait) throws(TimerError) in max(try TimerClock.validatedDelay(wait), delayNanoseconds) }
        return (delayNanoseconds, maxWaitNanoseconds)
    }

    /// Whether a value waits for the trailing edge.
    public var isPending: Bool { state.withLock { $0.pending != nil } }

    /// Sends a value: starts a burst, or extends the current one.
    ///
    /// - Throws: ``TimerError/clockShutDown`` when the clock was shut down.
    public func send(_ value: Value) throws(TimerError) {
        let now = clock.nanosecondsNow
        let (runNow, deadline, generation, previous) = state.withLock { state -> (Value?, Int64, UInt64, ScheduledCallback?) in
            var runNow: Value?
            if state.burstStart == nil {
                state.burstStart = now
                if leading { runNow = value } else { state.pending = value }
            } else {
                state.pending = trailing ? value : nil
            }
            var deadline = now.addingSaturating(delayNanoseconds)
            if let maxWait = maxWaitNanoseconds, let start = state.burstStart { deadline = min(deadline, start.addingSaturating(maxWait)) }
            state.generation &+= 1
            defer { state.timer = nil }
            return (runNow, deadline, state.generation, state.timer)
        }
        previous?.cancel()
        if let runNow { try run(runNow) }
        let timer = try clock.schedule(at: .at(TimerInstant(kind: clock.kind, nanoseconds: deadline)), delivery: delivery) { [weak self] in
            self?.burstEnded(generation)
        }
        let current = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.timer = timer
            return true
        }
        if !current { timer.cancel() }
    }

    /// Runs the pending value now (through the delivery) and ends the burst; `false` if nothing
    /// was pending.
    @discardableResult
    public func flush() throws(TimerError) -> Bool {
        let (value, timer) = endBurst()
        timer?.cancel()
        guard let value else { return false }
        try run(value)
        return true
    }

    /// Drops the pending value and ends the burst (C8: once this returns, no trailing edge of it
    /// begins). Returns whether a value was dropped.
    @discardableResult
    public func cancel() -> Bool {
        let (value, timer) = endBurst()
        timer?.cancel()
        return value != nil
    }

    // MARK: Edges

    private func endBurst() -> (Value?, ScheduledCallback?) {
        state.withLock { state in
            defer {
                state.pending = nil
                state.burstStart = nil
                state.timer = nil
                state.generation &+= 1
            }
            return (state.pending, state.timer)
        }
    }

    /// The end of the burst that timer `generation` was made for; a newer send or a flush makes
    /// it stale.
    private func burstEnded(_ generation: UInt64) {
        let value = state.withLock { state -> Value?? in
            guard state.generation == generation else { return nil }
            defer {
                state.pending = nil
                state.burstStart = nil
                state.timer = nil
            }
            return .some(state.pending)
        }
        if let value = value ?? nil { handler(self, value) { cancel() } }
    }

    /// Runs the action with `value` through the delivery, at once.
    private func run(_ value: Value) throws(TimerError) {
        try clock.schedule(at: .now, delivery: delivery) { self.handler(self, value) { self.cancel() } }
    }
}
