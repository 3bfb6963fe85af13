import Foundation

extension DurableTimers {
    /// How durable a write is before the call that made it returns.
    public enum Durability: Sendable, Hashable {
        /// On disk: survives a crash of the process and a power loss (`synchronous = FULL`). The
        /// default.
        case full
        /// Survives a crash of the process; a power loss may lose the last moments' writes
        /// (`synchronous = NORMAL` in WAL mode). Several times the throughput of single writes.
        case normal
    }

    /// How a runner loads, claims, retries and spreads its timers. The defaults suit an app or a
    /// server; tests shorten them.
    public struct Options: Sendable {
        /// How far ahead the runner loads timers into TimerKit's engine; it loads again halfway.
        /// A timer scheduled through this runner inside the horizon is armed at once. One minute by
        /// default; at most a day.
        public var horizon: Duration = .seconds(60)
        /// How long a claim holds a timer before another runner may take it (after a crash, say).
        /// Renewed every third of it while the handler runs. 30 seconds by default; at most a day.
        public var lease: Duration = .seconds(30)
        /// Attempts at one occurrence before the timer is parked as failed. 5 by default.
        public var maxAttempts = 5
        /// The wait before the second attempt; it doubles with each attempt after, up to
        /// ``maxRetryDelay``. One second by default.
        public var retryDelay: Duration = .seconds(1)
        /// The longest wait between attempts. Five minutes by default.
        public var maxRetryDelay: Duration = .seconds(300)
        /// The lateness that still counts as on time for ``MisfirePolicy/skip``. One second by
        /// default.
        public var grace: Duration = .seconds(1)
        /// The longest a handler may run before its task is cancelled and the run counts as a
        /// failed attempt; a handler's own `timeout` at registration overrides it. `nil` (no limit)
        /// by default.
        public var handlerTimeout: Duration?
        /// How many handlers run at once; more due timers wait for a turn. 64 by default.
        ///
        /// A slot is taken from the claim of a timer until its handler returns, so the slots also
        /// bound how many timers one round trip to the store claims. Lower it when the handlers
        /// call something that takes fewer requests at once; a handler's own limit
        /// (`maxConcurrentRuns`) does that for one handler.
        public var maxConcurrentHandlers = 64
        /// At most how many overdue timers a second the runner sweeps when it catches up, or
        /// `nil` (the default) for no cap.
        ///
        /// Timers overdue by more than a second when the runner loads them (after a restart, say)
        /// are not loaded one by one. They are swept instead: the earliest first, in batches of
        /// the free handler slots, each batch rows no other runner has taken. With no cap, a
        /// backlog drains as fast as the handler slots turn over.
        ///
        /// Set a cap to spare what the handlers call from a restart's burst. It applies to sweeps
        /// only: timers the runner has armed are claimed as they come due, however late, and
        /// sweeps take turns with them.
        public var catchUpRate: Int?
        /// How long a write waits for another connection's lock before ``DurableTimerError/locked(reason:)``.
        /// Five seconds by default; more than zero and at most a day.
        public var busyTimeout: Duration = .seconds(5)
        /// How durable each write is. ``Durability/full`` by default.
        public var durability: Durability = .full
        /// What the run history keeps (``DurableTimers/history(key:limit:)``): the last 10 runs of
        /// each timer for 7 days by default; ``History/off`` records none.
        public var history = History()
        /// Whether opening the database may bring its schema up to this build's version.
        /// ``SchemaUpgrade/automatic`` by default.
        public var schemaUpgrade: SchemaUpgrade = .automatic
        /// Told of failures the runner met on its own (a store error while firing, a lease lost to
        /// another runner); it retries them. Prints to standard error by default.
        public var onError: @Sendable (DurableTimerError) -> Void = { error in
            FileHandle.standardError.write(Data("TimerKitDurable: \(error)\n".utf8))
        }

        /// Told of what the runner does — claims, handler starts with their lateness, handler
        /// ends with what became of the occurrence — synchronously, on the task that did it: record
        /// and return. Nothing by default; `TimerKitDurableMetrics` reports them as metrics and logs.
        public var onEvent: @Sendable (DurableTimerEvent) -> Void = { _ in }

        /// Traces schedules and runs (``DurableTimerInstrumentation``): TimerKitDurableTracing's
        /// `DurableTimerTracing` for swift-distributed-tracing. `nil` (the default) traces nothing
        /// and stores no trace context.
        public var instrumentation: (any DurableTimerInstrumentation)?

        /// The most timers one load of the horizon arms (tests make it small). A horizon that
        /// holds more (timers due ahead: overdue ones are swept, not loaded) is loaded in pieces,
        /// each when the last timer of the one before comes due and fewer than half a piece is
        /// held.
        package var maximumArmed = 100_000

        /// The defaults.
        public init() {}
    }
}

extension DurableTimers {
    /// What the run history keeps: each run's start, end, outcome, lateness, instance and error,
    /// written in the same transaction as the run's end.
    ///
    /// On by default, with a small default: "did it fire, when, how late" is the question asked
    /// after something went wrong, when it is too late to turn recording on. One row per run, pruned
    /// per timer as it is written (a one-shot leaves one row, a repeating timer its last
    /// ``runsPerTimer``) and by age in short batches with each heartbeat (every half horizon). Its cost is
    /// measured in BENCHMARKS.md ("Run history").
    public struct History: Sendable, Hashable {
        /// The most runs kept per timer; 0 records none.
        public var runsPerTimer: Int
        /// How long a run is kept after it ended.
        public var maxAge: Duration

        /// Keeps the last `runsPerTimer` runs of each timer for `maxAge`.
        public init(runsPerTimer: Int = 10, maxAge: Duration = .seconds(7 * 86_400)) {
            self.runsPerTimer = max(runsPerTimer, 0)
            self.maxAge = maxAge
        }

        /// Records no runs.
        public static let off = History(runsPerTimer: 0)
    }
}

extension DurableTimers.Options {
    /// The longest lease, horizon and busy timeout: a day. A lease of centuries would leave a
    /// crashed instance's timers held for ever, and a day past now still fits in 64 bits of
    /// nanoseconds wherever the stores add it. A PostgreSQL write notifies the other instances
    /// of timers ready within it, so that each arms what its own horizon holds.
    package static let longest: Duration = .seconds(86_400)

    /// Checks the options and `namespace` before anything is opened (the initializers call it
    /// first: options out of range change nothing in the database).
    ///
    /// - Throws: ``DurableTimerError/invalidDuration(_:)`` for an option out of range,
    ///   ``DurableTimerError/invalidKey(_:)`` for an invalid namespace.
    package func validate(namespace: String) throws(DurableTimerError) {
        try DurableLimits.validate(key: namespace)
        guard maxAttempts >= 1, maxConcurrentHandlers >= 1, (catchUpRate ?? 1) >= 1 else {
            throw .invalidDuration("maxAttempts, maxConcurrentHandlers and catchUpRate must be at least 1")
        }
        for (name, value) in [("horizon", horizon), ("lease", lease), ("retryDelay", retryDelay), ("busyTimeout", busyTimeout)] where value <= .zero {
            throw .invalidDuration("\(name) must be more than zero")
        }
        for (name, value) in [("horizon", horizon), ("lease", lease), ("busyTimeout", busyTimeout)] where value > Self.longest {
            throw .invalidDuration("\(name) must be at most a day (it was \(value))")
        }
        if grace < .zero { throw .invalidDuration("grace must not be negative") }
        if let handlerTimeout, handlerTimeout <= .zero { throw .invalidDuration("handlerTimeout must be more than zero") }
    }
}
