import Dispatch

extension ScheduledTimer {
    /// Schedules a repeating timer that calls a closure (C4, C5).
    ///
    /// Deadlines lie on a fixed grid — `first`, `first + interval`, `first + 2·interval`, … — that
    /// lateness, tolerance and slow handlers never shift (C4). The handler receives the timer (to
    /// invalidate it, say) and a ``TimerFire`` describing the fire.
    ///
    /// The timer runs until it is invalidated, whether or not you keep the returned handle (C12).
    /// If the closure calls back into an object, prefer the owner-bound form
    /// ``repeating(every:first:tolerance:clock:missedDeadlines:delivery:owner:_:)-(_,_,_,_,_,_,_,(Owner,ScheduledTimer,TimerFire)->Void)``, which cannot
    /// create a retain cycle (C11).
    ///
    /// ```swift
    /// let heartbeat = try ScheduledTimer.repeating(every: .seconds(1)) { timer, fire in
    ///     print("tick \(fire.sequenceNumber), \(fire.lateness) late")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - interval: The time between deadlines; must be positive.
    ///   - first: The first deadline; by default one interval from now, like `Foundation.Timer`.
    ///   - tolerance: How late a fire may be so that the engine can serve several timers with one
    ///     wake-up (C3); zero by default.
    ///   - clock: The clock (C1); continuous by default.
    ///   - missedDeadlines: What to do about missed deadlines (C5); coalesce by default.
    ///   - delivery: Where the handler runs (C15); the engine thread by default.
    ///   - handler: The closure to run at each fire.
    /// - Throws: ``TimerError`` for a non-positive interval, a negative tolerance, a burst limit
    ///   below 1, a duration that overflows, an instant of another clock, or a shut-down clock.
    @discardableResult
    public static func repeating(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: interval, first: first, tolerance: tolerance, clock: clock, policy: missedDeadlines, delivery: delivery, handler: handler)
    }

    /// Schedules a one-shot timer that calls a closure once, at `start` (C6).
    ///
    /// The timer is invalid from the moment its fire starts — inside the handler ``isValid`` is
    /// already `false` — and it runs whether or not you keep the returned handle (C12).
    ///
    /// ```swift
    /// try ScheduledTimer.once(at: .after(.milliseconds(300))) { _, _ in
    ///     print("debounced")
    /// }
    /// ```
    @discardableResult
    public static func once(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: nil, first: start, tolerance: tolerance, clock: clock, policy: .coalesce, delivery: delivery, handler: handler)
    }

    /// Schedules a repeating timer bound to an owner, held weakly (C11) — the form to use whenever
    /// the handler calls back into an object.
    ///
    /// The timer never keeps `owner` alive. Store it in a property of the owner: when the last
    /// outside reference to the owner goes, the owner's `deinit` runs at once, and at its next
    /// deadline the timer finds the owner gone and invalidates itself without calling the handler.
    /// The handler receives the owner, the timer (to invalidate it, say) and the fire.
    ///
    /// ```swift
    /// final class Poller: Sendable {
    ///     let timer = Mutex<ScheduledTimer?>(nil)
    ///     func start() throws {
    ///         let timer = try ScheduledTimer.repeating(every: .seconds(5), owner: self) { poller, timer, _ in
    ///             if poller.poll() == .done { timer.invalidate() }
    ///         }
    ///         self.timer.withLock { $0 = timer }
    ///     }
    ///     func poll() -> PollResult { … }
    /// }
    /// ```
    @discardableResult
    public static func repeating<Owner: AnyObject & Sendable>(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: interval, first: first, tolerance: tolerance, clock: clock, policy: missedDeadlines, delivery: delivery, handler: bind(owner, handler))
    }

    /// Schedules a one-shot timer bound to an owner, held weakly (C11). If the owner is gone by the
    /// deadline, the timer ends without calling the handler.
    @discardableResult
    public static func once<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: nil, first: start, tolerance: tolerance, clock: clock, policy: .coalesce, delivery: delivery, handler: bind(owner, handler))
    }

    /// The earlier owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "the handler receives the timer too: { owner, timer, fire in … }")
    @discardableResult
    public static func repeating<Owner: AnyObject & Sendable>(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(
            interval: interval, first: first, tolerance: tolerance, clock: clock, policy: missedDeadlines, delivery: delivery,
            handler: bind(owner) { owner, _, fire in handler(owner, fire) })
    }

    /// The earlier owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "the handler receives the timer too: { owner, timer, fire in … }")
    @discardableResult
    public static func once<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(
            interval: nil, first: start, tolerance: tolerance, clock: clock, policy: .coalesce, delivery: delivery,
            handler: bind(owner) { owner, _, fire in handler(owner, fire) })
    }

    static func bind<Owner: AnyObject & Sendable>(
        _ owner: Owner,
        _ handler: @escaping @Sendable (Owner, ScheduledTimer, TimerFire) -> Void
    ) -> Handler {
        { [weak owner] timer, fire in
            guard let owner else {
                timer.invalidate()
                return
            }
            handler(owner, timer, fire)
        }
    }

    static func make(
        interval: Duration?,
        first: TimerStart?,
        tolerance: Duration,
        clock: TimerClock,
        policy: MissedDeadlinePolicy,
        delivery: TimerDelivery,
        suspended: Bool = false,
        onInvalidate: (@Sendable () -> Void)? = nil,
        handler: @escaping Handler
    ) throws(TimerError) -> ScheduledTimer {
        let intervalNanoseconds = try interval.map { (interval) throws(TimerError) in try validatedInterval(interval) } ?? 0
        let toleranceNanoseconds = try validatedTolerance(tolerance)
        let policy = try policy.validated()
        let engine = clock.engine
        let firstDeadline = try firstDeadline(first ?? (interval == nil ? .now : nil), interval: intervalNanoseconds, now: { engine.now() }, kind: engine.kind)
        let timer = ScheduledTimer(
            engine: engine,
            firstDeadline: firstDeadline,
            interval: intervalNanoseconds,
            tolerance: toleranceNanoseconds,
            policy: policy,
            delivery: delivery,
            handler: handler)
        timer.onInvalidate = onInvalidate
        try engine.register(timer, suspended: suspended)
        return timer
    }
}
