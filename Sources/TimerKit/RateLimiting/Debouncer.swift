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

    private let handler: TimerHandler<Debouncer, Value>
    private let storage: RateLimiterStorage<DebounceStateMachine<Value>>

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
        let (delayNanoseconds, maxWaitNanoseconds) = try Self.validated(delay: delay, leading: leading, trailing: trailing, maxWait: maxWait)
        self.delay = delay
        self.maxWait = maxWait
        self.leading = leading
        self.trailing = trailing
        self.clock = clock
        self.handler = handler
        let machine = DebounceStateMachine<Value>(delay: delayNanoseconds, maxWait: maxWaitNanoseconds, leading: leading, trailing: trailing)
        self.storage = RateLimiterStorage(machine, clock: clock, delivery: try handler.delivery(delivery, otherwise: .engineThread))
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
    public var isPending: Bool { storage.read { $0.pending != nil } }

    /// Sends a value: starts a burst, or extends the current one.
    ///
    /// - Throws: ``TimerError/clockShutDown`` when the clock was shut down.
    public func send(_ value: Value) throws(TimerError) {
        let now = clock.nanosecondsNow
        let sent = storage.decide(replacingEdge: true) { $0.send(value, at: now) }
        if let runNow = sent.runNow { try run(runNow) }
        let generation = sent.generation
        try storage.scheduleEdge(at: sent.edgeDeadline, generation: generation) { [weak self] in
            self?.edgeTimerExpired(generation)
        }
    }

    /// Runs the pending value now (through the delivery) and ends the burst; `false` if nothing
    /// was pending.
    @discardableResult
    public func flush() throws(TimerError) -> Bool {
        guard let value = storage.decide(replacingEdge: true, { $0.endBurst() }) else { return false }
        try run(value)
        return true
    }

    /// Drops the pending value and ends the burst (C8: once this returns, no trailing edge of it
    /// begins). Returns whether a value was dropped.
    @discardableResult
    public func cancel() -> Bool {
        storage.decide(replacingEdge: true) { $0.endBurst() } != nil
    }

    // MARK: Edges

    /// The end of the burst that the timer of `generation` was made for; a newer send or a flush
    /// makes it stale.
    private func edgeTimerExpired(_ generation: UInt64) {
        guard case .run(let value) = storage.edgeExpired(generation: generation, { $0.edgeTimerExpired(generation) }) else { return }
        handler(self, value) { cancel() }
    }

    /// Runs the action with `value` through the delivery, at once.
    private func run(_ value: Value) throws(TimerError) {
        try storage.runNow { self.handler(self, value) { self.cancel() } }
    }
}
