// The hooks `TimerKitTesting` drives a virtual clock through. Not API: use `VirtualClock`.

extension TimerClock {
    /// Creates a virtual clock whose engine has no driver: time moves only through
    /// ``_advanceVirtualTime(to:maxFires:)``.
    @_spi(VirtualTime)
    public static func _makeVirtual(startingAt nanoseconds: Int64, taskExecutor: (any TaskExecutor)? = nil) -> TimerClock {
        TimerClock(engine: TimerEngine(kind: .virtual, isShared: false, driver: nil, virtualStart: nanoseconds, taskExecutor: taskExecutor))
    }

    /// Moves a virtual clock forward to `nanoseconds`, firing what comes due; returns the number of
    /// handler runs.
    @_spi(VirtualTime)
    public func _advanceVirtualTime(to nanoseconds: Int64, maxFires: Int) -> Int {
        engine.advance(to: nanoseconds, maxFires: maxFires)
    }

    /// Sets a virtual clock to `nanoseconds` at once, then fires what is due there, each timer once
    /// per its missed-deadline policy; returns the number of handler runs.
    @_spi(VirtualTime)
    public func _jumpVirtualTime(to nanoseconds: Int64) -> Int {
        engine.advance(to: nanoseconds, jumping: true)
    }

    /// The deadlines of the tasks sleeping on a virtual clock, earliest first.
    @_spi(VirtualTime)
    public var _virtualSleeperDeadlines: [Int64] { engine.sleepers.withLock { $0.values.map(\.deadline) }.sorted() }

    /// The earliest deadline among a virtual clock's pending timers.
    @_spi(VirtualTime)
    public var _earliestVirtualDeadline: Int64? { engine.earliestDeadline }
}

extension TimerClock {
    /// Invalidates every timer of a virtual clock, releasing the timers and what their handlers
    /// captured (a pending timer and its engine otherwise keep each other alive).
    @_spi(VirtualTime)
    public func _shutDownVirtual() {
        precondition(kind == .virtual, "_shutDownVirtual(): not a virtual clock")
        engine.shutdown()
    }
}

extension TimerClock {
    /// Where the tasks that TimerKit's modules start for this clock's work should run: a virtual
    /// clock's executor, so that its async `advance` waits for them; `nil` (the global executor) for
    /// the system clocks. For the package's own modules (`TimerKitDurable`).
    package var taskExecutor: (any TaskExecutor)? { engine.taskExecutor }
}
