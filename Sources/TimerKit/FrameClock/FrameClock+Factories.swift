import Dispatch

extension FrameClock {
    /// Starts a frame clock that calls a closure at each frame. Frame 0 is now; the first tick
    /// comes one frame later.
    ///
    /// - Parameters:
    ///   - framesPerSecond: The frame rate, e.g. 60 or 120.
    ///   - clock: The clock (C1); continuous by default.
    ///   - delivery: Where the handler runs (C15); the engine thread by default.
    ///   - handler: Called with the frame clock and each frame.
    /// - Throws: ``TimerError/invalidFrameRate(_:)`` for a rate below 1 or above a billion;
    ///   ``TimerError/clockShutDown``.
    @discardableResult
    public static func start(
        framesPerSecond: Int = 60,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (FrameClock, Frame) -> Void
    ) throws(TimerError) -> FrameClock {
        try make(framesPerSecond: framesPerSecond, clock: clock, delivery: delivery, handler: handler)
    }

    /// Starts a frame clock bound to an owner, held weakly (C11): once the owner is gone, the clock
    /// ends at its next frame without calling the handler.
    @discardableResult
    public static func start<Owner: AnyObject & Sendable>(
        framesPerSecond: Int = 60,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, FrameClock, Frame) -> Void
    ) throws(TimerError) -> FrameClock {
        try make(framesPerSecond: framesPerSecond, clock: clock, delivery: delivery) { [weak owner] frames, frame in
            guard let owner else {
                frames.invalidate()
                return
            }
            handler(owner, frames, frame)
        }
    }

    /// Starts a frame clock bound to a main-actor owner, held weakly (C11), whose handler runs on
    /// the main actor (C15): the form for a view that animates.
    @MainActor
    @discardableResult
    public static func startOnMainActor<Owner: AnyObject & Sendable>(
        framesPerSecond: Int = 60,
        clock: TimerClock = .continuous,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, FrameClock, Frame) -> Void
    ) throws(TimerError) -> FrameClock {
        try make(framesPerSecond: framesPerSecond, clock: clock, delivery: .queue(.main)) { [weak owner] frames, frame in
            guard let owner else {
                frames.invalidate()
                return
            }
            MainActor.assumeIsolated { handler(owner, frames, frame) }
        }
    }

    static func make(
        framesPerSecond: Int, clock: TimerClock, delivery: TimerDelivery, handler: @escaping Handler
    ) throws(TimerError) -> FrameClock {
        guard (1...1_000_000_000).contains(framesPerSecond) else { throw .invalidFrameRate(framesPerSecond) }
        let frames = FrameClock(framesPerSecond: framesPerSecond, clock: clock, origin: clock.engine.now(), delivery: delivery, handler: handler)
        try frames.start(at: 1)
        return frames
    }
}
