/// A debouncer's decisions, as a value: bursts, edges and stale timers, with plain integers for
/// instants. ``Debouncer`` keeps one in its ``RateLimiterStorage`` and acts on what it returns.
struct DebounceStateMachine<Value>: RateLimitingStateMachine {
    /// What a sent value asks for: a run now (the leading edge), and the end of the burst, timed.
    struct Sent {
        /// The value to run at once, if the value started a burst with `leading`.
        var runNow: Value?
        /// When the burst ends unless another value comes first.
        var edgeDeadline: Int64
        /// The generation of the timer to schedule for that end.
        var generation: UInt64
    }

    /// What the end of a burst, timed by the timer of `generation`, means now.
    enum Edge {
        /// A newer value, a flush or a cancel came after that timer was made: nothing.
        case stale
        /// The burst ended with nothing to run (leading only, or the value already ran).
        case quiet
        /// The burst ended: run its latest value.
        case run(Value)
    }

    let delay: Int64
    let maxWait: Int64?
    let leading: Bool
    let trailing: Bool

    /// The value the trailing edge will run with.
    private(set) var pending: Value?
    /// When the current burst began; `nil` between bursts.
    private var burstStart: Int64?
    /// Counts the edge timers made: an expiry of an older one is stale.
    private(set) var generation: UInt64 = 0

    init(delay: Int64, maxWait: Int64?, leading: Bool, trailing: Bool) {
        self.delay = delay
        self.maxWait = maxWait
        self.leading = leading
        self.trailing = trailing
    }

    /// A value sent at `now`: starts a burst, or extends the current one. The edge timer made
    /// before it is stale from now on.
    mutating func send(_ value: Value, at now: Int64) -> Sent {
        var runNow: Value?
        if burstStart == nil {
            burstStart = now
            if leading { runNow = value } else { pending = value }
        } else {
            pending = trailing ? value : nil
        }
        var deadline = now.addingSaturating(delay)
        if let maxWait, let burstStart { deadline = min(deadline, burstStart.addingSaturating(maxWait)) }
        generation &+= 1
        return Sent(runNow: runNow, edgeDeadline: deadline, generation: generation)
    }

    /// Ends the burst at once (a flush or a cancel); returns the value that was pending.
    mutating func endBurst() -> Value? {
        defer {
            pending = nil
            burstStart = nil
            generation &+= 1
        }
        return pending
    }

    /// The edge timer of `generation` expired.
    mutating func edgeTimerExpired(_ timerGeneration: UInt64) -> Edge {
        guard generation == timerGeneration else { return .stale }
        defer {
            pending = nil
            burstStart = nil
        }
        return pending.map(Edge.run) ?? .quiet
    }
}

extension DebounceStateMachine: Sendable where Value: Sendable {}
