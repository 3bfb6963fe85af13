/// What a rate limiter's state machine must say: which of its edge timers is current.
protocol RateLimitingStateMachine {
    /// The generation of the current edge timer: a timer made for another one is stale.
    var generation: UInt64 { get }
}

/// The storage ``Debouncer`` and ``Throttler`` share: their state machine and the timer of the
/// next edge behind one lock. The machine decides under the lock; the storage schedules, cancels
/// and runs outside it.
final class RateLimiterStorage<Machine: RateLimitingStateMachine>: Sendable where Machine: Sendable {
    private struct State: Sendable {
        var machine: Machine
        /// The timer of the next edge, if one is scheduled.
        var edgeTimer: ScheduledCallback?
    }

    let clock: TimerClock
    let delivery: TimerDelivery
    private let state: Locked<State>

    init(_ machine: Machine, clock: TimerClock, delivery: TimerDelivery) {
        self.clock = clock
        self.delivery = delivery
        self.state = Locked(State(machine: machine))
    }

    deinit {
        // A released debouncer or throttler drops what it held.
        _ = state.withLock { $0.edgeTimer }?.cancel()
    }

    /// Reads the machine.
    func read<Result>(_ body: (Machine) -> Result) -> Result {
        state.withLock { body($0.machine) }
    }

    /// Lets the machine decide, under the lock. With `replacingEdge`, the edge timer is taken out
    /// and cancelled after the lock is let go (the decision made it stale).
    func decide<Result>(replacingEdge: Bool, _ body: (inout Machine) -> Result) -> Result {
        let (result, previous) = state.withLock { state -> (Result, ScheduledCallback?) in
            let result = body(&state.machine)
            guard replacingEdge else { return (result, nil) }
            defer { state.edgeTimer = nil }
            return (result, state.edgeTimer)
        }
        previous?.cancel()
        return result
    }

    /// The edge timer of `generation` expired: lets the machine say what that means, under the
    /// lock. The timer is forgotten if it was the current one.
    func edgeExpired<Result>(generation: UInt64, _ body: (inout Machine) -> Result) -> Result {
        state.withLock { state in
            if state.machine.generation == generation { state.edgeTimer = nil }
            return body(&state.machine)
        }
    }

    /// Schedules the edge timer of `generation` at `deadline`; kept unless the machine moved on
    /// meanwhile (then it is cancelled at once).
    func scheduleEdge(at deadline: Int64, generation: UInt64, _ expired: @escaping @Sendable () -> Void) throws(TimerError) {
        let timer = try clock.schedule(at: .at(TimerInstant(kind: clock.kind, nanoseconds: deadline)), delivery: delivery, expired)
        let isCurrent = state.withLock { state -> Bool in
            guard state.machine.generation == generation else { return false }
            state.edgeTimer = timer
            return true
        }
        if !isCurrent { timer.cancel() }
    }

    /// Runs `body` through the delivery, at once (the leading edge and a flush go through the
    /// engine too, so on a virtual clock they run when it is next advanced).
    func runNow(_ body: @escaping @Sendable () -> Void) throws(TimerError) {
        try clock.schedule(at: .now, delivery: delivery, body)
    }
}
