import Dispatch

extension ScheduledTimer {
    /// Schedules a repeating timer that calls a closure (C4, C5).
    ///
    /// Deadlines lie on a fixed grid — `first`, `first + interval`, `first + 2·interval`, … — that
    /// lateness, tolerance and slow handlers never shift (C4). The handler receives the timer (to
    /// invalidate it, say) and a ``TimerFire`` describing the fire.
    ///
    /// The timer runs until it is invalidated, whether or not you keep the returned handle (C12).
    /// If the closure calls back into an object, bind it to the object instead —
    /// `.bound(to: self) { owner, timer, fire in … }` (``TimerHandler``) — which cannot create a
    /// retain cycle (C11); for the main actor, `.onMainActor { … }`.
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
    ///   - precision: Whether the engine sleeps until the deadline (``TimerPrecision/standard``, the
    ///     default) or sleeps until shortly before it and waits actively (``TimerPrecision/high``).
    ///   - clock: The clock (C1); continuous by default.
    ///   - missedDeadlines: What to do about missed deadlines (C5); coalesce by default.
    ///   - delivery: Where the handler runs (C15); the engine thread by default.
    ///   - handler: The closure to run at each fire.
    /// - Throws: ``TimerError`` for a non-positive interval, a negative tolerance, a tolerance with
    ///   high precision, a burst limit below 1, a duration that overflows, an instant of another
    ///   clock, or a shut-down clock.
    @discardableResult
    public static func repeating(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        precision: TimerPrecision = .standard,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(
            interval: interval, first: first, tolerance: tolerance, precision: precision, clock: clock, policy: missedDeadlines, delivery: delivery,
            handler: handler)
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
        precision: TimerPrecision = .standard,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: nil, first: start, tolerance: tolerance, precision: precision, clock: clock, policy: .coalesce, delivery: delivery, handler: handler)
    }

    /// Schedules a repeating timer whose handler is a ``TimerHandler``: bound to an owner held
    /// weakly (C11), on the main actor (C15), or both.
    ///
    /// The timer never keeps an owner alive. Store it in a property of the owner: when the last
    /// outside reference to the owner goes, the owner's `deinit` runs at once, and at its next
    /// deadline the timer finds the owner gone and invalidates itself without calling the handler.
    ///
    /// ```swift
    /// @MainActor final class CountdownViewModel {
    ///     var timer: ScheduledTimer?
    ///     var remaining = 60
    ///     func start() throws {
    ///         timer = try ScheduledTimer.repeating(every: .seconds(1), .onMainActor(bound: self) { model, timer, _ in
    ///             model.remaining -= 1
    ///             if model.remaining == 0 { timer.invalidate() }
    ///         })
    ///     }
    /// }
    /// ```
    ///
    /// The other parameters mean what they mean for
    /// ``repeating(every:first:tolerance:precision:clock:missedDeadlines:delivery:_:)-(_,_,_,_,_,_,_,(ScheduledTimer,TimerFire)->Void)``;
    /// `delivery` defaults to the engine thread, or the main queue for a main-actor handler.
    /// - Throws: The errors of the closure form, and ``TimerError/conflictingDelivery(_:)`` for a
    ///   main-actor handler given a delivery other than the main queue.
    @discardableResult
    public static func repeating(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        precision: TimerPrecision = .standard,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        delivery: TimerDelivery? = nil,
        _ handler: TimerHandler<ScheduledTimer, TimerFire>
    ) throws(TimerError) -> ScheduledTimer {
        try make(
            interval: interval, first: first, tolerance: tolerance, precision: precision, clock: clock, policy: missedDeadlines,
            delivery: handler.delivery(delivery, otherwise: .engineThread), handler: handler.closure { $0.invalidate() })
    }

    /// Schedules a one-shot timer whose handler is a ``TimerHandler``: bound to an owner held
    /// weakly (C11), on the main actor (C15), or both. If the owner is gone by the deadline, the
    /// timer ends without calling the handler.
    ///
    /// - Throws: The errors of the closure form, and ``TimerError/conflictingDelivery(_:)`` for a
    ///   main-actor handler given a delivery other than the main queue.
    @discardableResult
    public static func once(
        at start: TimerStart,
        tolerance: Duration = .zero,
        precision: TimerPrecision = .standard,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery? = nil,
        _ handler: TimerHandler<ScheduledTimer, TimerFire>
    ) throws(TimerError) -> ScheduledTimer {
        try make(
            interval: nil, first: start, tolerance: tolerance, precision: precision, clock: clock, policy: .coalesce,
            delivery: handler.delivery(delivery, otherwise: .engineThread), handler: handler.closure { $0.invalidate() })
    }

    static func make(
        interval: Duration?,
        first: TimerStart?,
        tolerance: Duration,
        precision: TimerPrecision = .standard,
        clock: TimerClock,
        policy: MissedDeadlinePolicy,
        delivery: TimerDelivery,
        suspended: Bool = false,
        onInvalidate: (@Sendable () -> Void)? = nil,
        handler: @escaping Handler
    ) throws(TimerError) -> ScheduledTimer {
        let intervalNanoseconds = try interval.map { (interval) throws(TimerError) in try validatedInterval(interval) } ?? 0
        let toleranceNanoseconds = try validatedTolerance(tolerance)
        guard !precision.isHigh || toleranceNanoseconds == 0 else { throw .toleranceWithHighPrecision(tolerance) }
        let policy = try policy.validated()
        // The engine is borrowed from the clock: a shared clock's engine is never retained here, so
        // threads that make timers at once do not contend for its reference count.
        let made = Unmanaged.passUnretained(clock.engine)._withUnsafeGuaranteedRef { engine -> Result<ScheduledTimer, TimerError> in
            do throws(TimerError) {
                let firstDeadline = try firstDeadline(
                    first ?? (interval == nil ? .now : nil), interval: intervalNanoseconds, now: { engine.now() }, kind: engine.kind)
                let timer = ScheduledTimer(
                    engine: engine,
                    firstDeadline: firstDeadline,
                    interval: intervalNanoseconds,
                    tolerance: toleranceNanoseconds,
                    precision: precision,
                    policy: policy,
                    delivery: delivery,
                    onInvalidate: onInvalidate,
                    handler: handler)
                try engine.register(timer, suspended: suspended)
                return .success(timer)
            } catch {
                return .failure(error)
            }
        }
        return try made.get()
    }
}
