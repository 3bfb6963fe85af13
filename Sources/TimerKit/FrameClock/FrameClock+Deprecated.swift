// The factories of TimerKit 0.1 for the owner and the main actor. They still compile and behave as
// before; each forwards to the one shape, a ``TimerHandler``.

extension FrameClock {
    /// Starts a frame clock bound to an owner, held weakly (C11).
    @available(*, deprecated, message: "use start(framesPerSecond:…, .bound(to: owner) { owner, frames, frame in … })")
    @discardableResult
    public static func start<Owner: AnyObject & Sendable>(
        framesPerSecond: Int = 60,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, FrameClock, Frame) -> Void
    ) throws(TimerError) -> FrameClock {
        try start(framesPerSecond: framesPerSecond, clock: clock, delivery: delivery, .bound(to: owner, handler))
    }

    /// Starts a frame clock bound to a main-actor owner, held weakly (C11).
    @available(*, deprecated, message: "use start(framesPerSecond:…, .onMainActor(bound: owner) { owner, frames, frame in … })")
    @MainActor
    @discardableResult
    public static func startOnMainActor<Owner: AnyObject & Sendable>(
        framesPerSecond: Int = 60,
        clock: TimerClock = .continuous,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, FrameClock, Frame) -> Void
    ) throws(TimerError) -> FrameClock {
        try start(framesPerSecond: framesPerSecond, clock: clock, .onMainActor(bound: owner, handler))
    }
}
