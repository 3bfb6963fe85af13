// The factories of TimerKit 0.1 for the owner and the main actor. They still compile and behave as
// before; each forwards to the one shape, a ``TimerHandler``.

extension Countdown {
    /// Starts a countdown bound to an owner, held weakly (C11).
    @available(*, deprecated, message: "use start(to:…, .bound(to: owner) { owner, countdown, tick in … })")
    @discardableResult
    public static func start<Owner: AnyObject & Sendable>(
        to deadline: TimerStart,
        unit: Duration = .seconds(1),
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, Countdown, Tick) -> Void
    ) throws(TimerError) -> Countdown {
        try start(to: deadline, unit: unit, clock: clock, delivery: delivery, .bound(to: owner, handler))
    }

    /// Starts a countdown whose handler runs on the main actor (C15).
    @available(*, deprecated, message: "use start(to:…, .onMainActor { countdown, tick in … })")
    @MainActor
    @discardableResult
    public static func startOnMainActor(
        to deadline: TimerStart,
        unit: Duration = .seconds(1),
        clock: TimerClock = .continuous,
        _ handler: @escaping @MainActor (Countdown, Tick) -> Void
    ) throws(TimerError) -> Countdown {
        try start(to: deadline, unit: unit, clock: clock, .onMainActor(handler))
    }

    /// Starts a countdown bound to a main-actor owner, held weakly (C11).
    @available(*, deprecated, message: "use start(to:…, .onMainActor(bound: owner) { owner, countdown, tick in … })")
    @MainActor
    @discardableResult
    public static func startOnMainActor<Owner: AnyObject & Sendable>(
        to deadline: TimerStart,
        unit: Duration = .seconds(1),
        clock: TimerClock = .continuous,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, Countdown, Tick) -> Void
    ) throws(TimerError) -> Countdown {
        try start(to: deadline, unit: unit, clock: clock, .onMainActor(bound: owner, handler))
    }
}
