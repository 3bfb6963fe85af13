import Dispatch

// The factories of TimerKit 0.1, one per combination of repeat, owner and main actor. They still
// compile and behave as before; each forwards to the one shape, a ``TimerHandler``.

extension ScheduledTimer {
    /// Schedules a repeating timer bound to an owner, held weakly (C11).
    @available(*, deprecated, message: "use repeating(every:…, .bound(to: owner) { owner, timer, fire in … })")
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
        try repeating(
            every: interval, first: first, tolerance: tolerance, clock: clock, missedDeadlines: missedDeadlines, delivery: delivery,
            .bound(to: owner, handler))
    }

    /// Schedules a one-shot timer bound to an owner, held weakly (C11).
    @available(*, deprecated, message: "use once(at:…, .bound(to: owner) { owner, timer, fire in … })")
    @discardableResult
    public static func once<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try once(at: start, tolerance: tolerance, clock: clock, delivery: delivery, .bound(to: owner, handler))
    }

    /// The earliest owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "use repeating(every:…, .bound(to: owner) { owner, timer, fire in … })")
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
        try repeating(
            every: interval, first: first, tolerance: tolerance, clock: clock, missedDeadlines: missedDeadlines, delivery: delivery,
            .bound(to: owner) { owner, _, fire in handler(owner, fire) })
    }

    /// The earliest owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "use once(at:…, .bound(to: owner) { owner, timer, fire in … })")
    @discardableResult
    public static func once<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        delivery: TimerDelivery = .engineThread,
        owner: Owner,
        _ handler: @escaping @Sendable (Owner, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try once(at: start, tolerance: tolerance, clock: clock, delivery: delivery, .bound(to: owner) { owner, _, fire in handler(owner, fire) })
    }

    /// Schedules a repeating timer whose handler runs on the main actor (C15).
    @available(*, deprecated, message: "use repeating(every:…, .onMainActor { timer, fire in … })")
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
        try repeating(
            every: interval, first: first, tolerance: tolerance, clock: clock, missedDeadlines: missedDeadlines, .onMainActor(handler))
    }

    /// Schedules a one-shot timer whose handler runs on the main actor (C15).
    @available(*, deprecated, message: "use once(at:…, .onMainActor { timer, fire in … })")
    @MainActor
    @discardableResult
    public static func onceOnMainActor(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        _ handler: @escaping @MainActor (ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try once(at: start, tolerance: tolerance, clock: clock, .onMainActor(handler))
    }

    /// Schedules a repeating timer bound to a main-actor owner, held weakly (C11).
    @available(*, deprecated, message: "use repeating(every:…, .onMainActor(bound: owner) { owner, timer, fire in … })")
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
        try repeating(
            every: interval, first: first, tolerance: tolerance, clock: clock, missedDeadlines: missedDeadlines,
            .onMainActor(bound: owner, handler))
    }

    /// Schedules a one-shot timer bound to a main-actor owner, held weakly (C11).
    @available(*, deprecated, message: "use once(at:…, .onMainActor(bound: owner) { owner, timer, fire in … })")
    @MainActor
    @discardableResult
    public static func onceOnMainActor<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, ScheduledTimer, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try once(at: start, tolerance: tolerance, clock: clock, .onMainActor(bound: owner, handler))
    }

    /// The earliest main-actor owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "use repeating(every:…, .onMainActor(bound: owner) { owner, timer, fire in … })")
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
        try repeating(
            every: interval, first: first, tolerance: tolerance, clock: clock, missedDeadlines: missedDeadlines,
            .onMainActor(bound: owner) { owner, _, fire in handler(owner, fire) })
    }

    /// The earliest main-actor owner-bound form, whose handler does not receive the timer.
    @available(*, deprecated, message: "use once(at:…, .onMainActor(bound: owner) { owner, timer, fire in … })")
    @MainActor
    @discardableResult
    public static func onceOnMainActor<Owner: AnyObject & Sendable>(
        at start: TimerStart,
        tolerance: Duration = .zero,
        clock: TimerClock = .continuous,
        owner: Owner,
        _ handler: @escaping @MainActor (Owner, TimerFire) -> Void
    ) throws(TimerError) -> ScheduledTimer {
        try once(at: start, tolerance: tolerance, clock: clock, .onMainActor(bound: owner) { owner, _, fire in handler(owner, fire) })
    }
}
