import Dispatch

extension FrameClock {
    /// Starts a frame clock that calls a closure at each frame. Frame 0 is now; the first tick
    /// comes one frame later.
    ///
    /// - Parameters:
    ///   - framesPerSecond: The frame rate, e.g. 60 or 120.
    ///   - precision: ``TimerPrecision/high`` to tick well within the OS's wake-up latency of each
    ///     frame, for CPU time spent waiting actively before each tick; standard by default.
    ///   - clock: The clock (C1); continuous by default.
    ///   - delivery: Where the handler runs (C15); the engine thread by default.
    ///   - handler: Called with the frame clock and each frame.
    /// - Throws: ``TimerError/invalidFrameRate(_:)`` for a rate below 1 or above a billion;
    ///   ``TimerError/clockShutDown``.
    @discardableResult
    public static func start(
        framesPerSecond: Int = 60,
        precision: TimerPrecision = .standard,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (FrameClock, Frame) -> Void
    ) throws(TimerError) -> FrameClock {
        try make(framesPerSecond: framesPerSecond, precision: precision, clock: clock, delivery: delivery, handler: handler)
    }

    /// Starts a frame clock whose handler is a ``TimerHandler``: bound to an owner held weakly
    /// (C11), on the main actor (C15), or both — the form for a view that animates:
    ///
    /// ```swift
    /// @MainActor final class SpinnerView {
    ///     var angle = 0.0
    ///     private var frames: FrameClock?
    ///     func startAnimating() throws {
    ///         frames = try FrameClock.start(framesPerSecond: 60, .onMainActor(bound: self) { view, _, frame in
    ///             view.angle += 90 * frame.elapsedSeconds   // 90° per second
    ///         })
    ///     }
    /// }
    /// ```
    ///
    /// Once an owner is gone, the clock is invalidated at its next frame without calling the
    /// handler. `delivery` defaults to the engine thread, or the main queue for a main-actor handler.
    /// - Throws: The errors of the closure form, and ``TimerError/conflictingDelivery(_:)`` for a
    ///   main-actor handler given a delivery other than the main queue.
    @discardableResult
    public static func start(
        framesPerSecond: Int = 60,
        precision: TimerPrecision = .standard,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery? = nil,
        _ handler: TimerHandler<FrameClock, Frame>
    ) throws(TimerError) -> FrameClock {
        try make(
            framesPerSecond: framesPerSecond, precision: precision, clock: clock,
            delivery: handler.delivery(delivery, otherwise: .engineThread),
            handler: handler.closure { $0.invalidate() })
    }

    static func make(
        framesPerSecond: Int, precision: TimerPrecision = .standard, clock: TimerClock, delivery: TimerDelivery, handler: @escaping Handler
    ) throws(TimerError) -> FrameClock {
        guard (1...1_000_000_000).contains(framesPerSecond) else { throw .invalidFrameRate(framesPerSecond) }
        let frames = FrameClock(
            framesPerSecond: framesPerSecond, clock: clock, precision: precision, origin: clock.nanosecondsNow, delivery: delivery, handler: handler)
        try frames.start(at: 1)
        return frames
    }
}
