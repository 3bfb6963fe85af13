import Dispatch

extension ScheduledTimer {
    /// Schedules a repeating timer whose handler runs on the main actor (C15).
    ///
    /// The handler is delivered on the main queue, so it runs in every run-loop mode — also while a
    /// scroll view tracks. (On Linux the main queue must be serviced: `dispatchMain()`, a running
    /// `RunLoop.main`, or Swift concurrency's main executor.) The other parameters mean what they
    /// mean for ``repeating(every:first:tolerance:clock:missedDeadlines:delivery:_:)``.
    @MainActor
    @discardableResult
    public static func repeatingOnMainActor(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        _ handler: @escaping @MainActor (ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: interval, first: first, tolerance: tolerance, clock: clock, policy: missedDeadlines, delivery: .queue(.main), handler: onMainActor(handler))
    }

    /// Schedules a one-shot timer whose handler runs on the main actor (C15).
    @MainActor
    @discardableResult
    public static func onceOnMainActor(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        _ handler: @escaping @MainActor (ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: nil, first: start, tolerance: tolerance, clock: clock, policy: .coalesce, delivery: .queue(.main), handler: onMainActor(handler))
    }

    /// Schedules a repeating timer bound to a main-actor owner, held weakly (C11): the form for a
    /// view controller or view model that keeps a timer in a property.
    ///
    /// ```swift
    /// @MainActor final class CountdownViewModel {
    ///     var timer: ScheduledTimer?
    ///     var remaining = 60
    ///     func start() throws {
    ///         timer = try ScheduledTimer.repeatingOnMainActor(every: .seconds(1), owner: self) { model, timer, _ in
    ///             model.remaining -= 1
    ///             if model.remaining == 0 { timer.invalidate() }
    ///         }
    ///     }
    /// }
    /// ```
    @MainActor
    @discardableResult
    public static func repeatingOnMainActor<Owner: AnyObject & Sendable>(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: interval, first: first, tolerance: tolerance, clock: clock, policy: missedDeadlines, delivery: .queue(.main), handler: onMainActor(bound(owner, handler)))
    }

    /// Schedules a one-shot timer bound to a main-actor owner, held weakly (C11). If the owner is
    /// gone by the deadline, the timer ends without calling the handler.
    @MainActor
    @discardableResult
    public static func onceOnMainActor<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(interval: nil, first: start, tolerance: tolerance, clock: clock, policy: .coalesce, delivery: .queue(.main), handler: onMainActor(bound(owner, handler)))
    }

    /// The earlier main-actor owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "the handler receives the timer too: { owner, timer, fire in … }")
    @MainActor
    @discardableResult
    public static func repeatingOnMainActor<Owner: AnyObject & Sendable>(
        every interval: Duration,
        first: TimerStart? = nil,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(
            interval: interval, first: first, tolerance: tolerance, clock: clock, policy: missedDeadlines, delivery: .queue(.main),
            handler: onMainActor(bound(owner) { owner, _, fire in handler(owner, fire) }))
    }

    /// The earlier main-actor owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "the handler receives the timer too: { owner, timer, fire in … }")
    @MainActor
    @discardableResult
    public static func onceOnMainActor<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try make(
            interval: nil, first: start, tolerance: tolerance, clock: clock, policy: .coalesce, delivery: .queue(.main),
            handler: onMainActor(bound(owner) { owner, _, fire in handler(owner, fire) }))
    }

    private static func bound<Owner: AnyObject & Sendable>(
        _ owner: Owner,
        _ handler: @escaping @MainActor (Owner, ScheduledTimer, TimerFire) -> Void
    ) -> @MainActor (ScheduledTimer, TimerFire) -> Void {
        { [weak owner] timer, fire in
            guard let owner else {
                timer.invalidate()
                return
            }
            handler(owner, timer, fire)
        }
    }

    private static func onMainActor(_ handler: @escaping @MainActor (ScheduledTimer, TimerFire) -> Void) -> Handler {
        { timer, fire in
            MainActor.assumeIsolated { handler(timer, fire) }
        }
    }
}
