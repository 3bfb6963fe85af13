extension TimerClock {
    /// Runs a closure once at `start`, on this clock, and returns a handle that can cancel it.
    ///
    /// The lightest way to be called back later: see ``ScheduledCallback``. A start in the past
    /// runs the closure at once (on the engine thread, soon after this returns; on a virtual clock,
    /// at the next advance).
    ///
    /// - Parameters:
    ///   - start: When to run: `.now`, `.after(delay)`, `.at(instant)` or `.date(date)`.
    ///   - tolerance: How late the run may be so that the engine can serve several deadlines with
    ///     one wake-up (C3); zero by default. The engine uses at most 4.29 s of it.
    ///   - delivery: Where the closure runs (C15): the engine thread by default — keep such a
    ///     closure short, and hand longer work on — or a queue.
    ///   - work: The closure. It is released as soon as it has run or been cancelled.
    /// - Throws: ``TimerError/negativeTolerance(_:)``, ``TimerError/durationOverflow``,
    ///   ``TimerError/clockMismatch(expected:got:)`` for an instant of another clock, and
    ///   ``TimerError/clockShutDown``.
    @discardableResult
    public func schedule(
        at start: TimerStart,
        tolerance: Duration = .zero,
        delivery: TimerDelivery = .engineThread,
        _ work: consuming @escaping @Sendable () -> Void
    ) throws(TimerError) -> ScheduledCallback {
        let slack = try ScheduledTimer.validatedTolerance(tolerance)
        let deadline = try ScheduledTimer.firstDeadline(start, interval: 0, now: { engine.now() }, kind: kind)
        let entry: TimerWork
        switch delivery.target {
        case .engineThread: entry = .callback(work)
        case .queue(let queue): entry = .queued(QueuedCallback(queue: queue, work: work))
        }
        let (index, sequence) = try engine.schedule(entry, deadline: deadline, slack: slack)
        return ScheduledCallback(engine: engine, index: index, sequence: sequence)
    }
}
