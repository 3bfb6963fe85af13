import Dispatch

extension Countdown {
    /// Starts a countdown to `deadline` that calls a closure at each tick (see ``Countdown`` for the
    /// rounding rule).
    ///
    /// The first tick comes at once with the value at the start, unless the deadline has already
    /// come: then the final tick is the only one.
    ///
    /// ```swift
    /// try Countdown.start(to: .after(.seconds(60))) { _, tick in
    ///     button.title = tick.isFinished ? "Resend code" : "Resend in \(tick.value) s"
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - deadline: When the countdown ends: `.after(_:)` a duration from now, `.at(_:)` an instant
    ///     of `clock`, or `.date(_:)` a calendar date (on the wall clock, the exact instant; on the
    ///     others, the time from now until then — how an app relaunched mid-countdown resumes from a
    ///     stored `Date`).
    ///   - unit: What the countdown counts in, and ticks at; one second by default.
    ///   - clock: The clock (C1); continuous by default.
    ///   - delivery: Where the handler runs (C15); the engine thread by default.
    ///   - handler: Called with the countdown and each tick.
    /// - Throws: ``TimerError`` for a non-positive unit, a duration that overflows, an instant of
    ///   another clock, or a shut-down clock.
    @discardableResult
    public static func start(
        to deadline: TimerStart,
        unit: Duration = .seconds(1),
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (Countdown, Tick) -> Void
    ) throws(TimerError) -> Countdown {
        try make(deadline: deadline, unit: unit, clock: clock, delivery: delivery, handler: handler)
    }

    /// Starts a countdown whose handler is a ``TimerHandler``: bound to an owner held weakly
    /// (C11), on the main actor (C15), or both — the form for a view model:
    ///
    /// ```swift
    /// @MainActor final class VerificationViewModel {
    ///     private(set) var label = ""
    ///     private var countdown: Countdown?
    ///
    ///     func codeSent() throws {
    ///         countdown = try Countdown.start(to: .after(.seconds(60)), .onMainActor(bound: self) { model, _, tick in
    ///             model.label = tick.isFinished ? "Resend code" : "Resend in \(tick.value) s"
    ///         })
    ///     }
    /// }
    /// ```
    ///
    /// Once an owner is gone, the countdown is cancelled at its next tick without calling the
    /// handler. The other parameters mean what they mean for the closure form;
    /// `delivery` defaults to the engine thread, or the main queue for a main-actor handler.
    /// - Throws: The errors of the closure form, and ``TimerError/conflictingDelivery(_:)`` for a
    ///   main-actor handler given a delivery other than the main queue.
    @discardableResult
    public static func start(
        to deadline: TimerStart,
        unit: Duration = .seconds(1),
        clock: TimerClock = .continuous,
        delivery: TimerDelivery? = nil,
        _ handler: TimerHandler<Countdown, Tick>
    ) throws(TimerError) -> Countdown {
        try make(
            deadline: deadline, unit: unit, clock: clock, delivery: handler.delivery(delivery, otherwise: .engineThread),
            handler: handler.closure { $0.cancel() })
    }

    static func make(
        deadline: TimerStart,
        unit: Duration,
        clock: TimerClock,
        delivery: TimerDelivery,
        suspended: Bool = false,
        handler: @escaping Handler
    ) throws(TimerError) -> Countdown {
        let unitNanoseconds = try TimerClock.validatedInterval(unit)
        let now = clock.nanosecondsNow
        let deadlineNanoseconds = try clock.deadline(of: deadline, interval: unitNanoseconds, now: now)
        guard !clock.isShutDown else { throw .clockShutDown }
        let countdown = Countdown(deadline: deadlineNanoseconds, unit: unitNanoseconds, clock: clock, delivery: delivery, handler: handler)
        if !suspended { countdown.run(now: now, tickNow: true) }
        return countdown
    }
}
