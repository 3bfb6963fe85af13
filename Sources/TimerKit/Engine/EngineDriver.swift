/// What wakes an engine: the one kernel object per clock that sleeps until the earliest deadline
/// (C16).
///
/// A driver calls ``TimerEngine/serviceDueTimers()`` when its deadline comes (and also spuriously;
/// the engine re-reads the clock), until that returns `false`.
protocol EngineDriver: Sendable {
    /// Starts the driver's thread or source. Called once, after the engine is fully initialized.
    func start(serving engine: TimerEngine)

    /// Wakes the engine at `deadline` (nanoseconds on the engine's clock) instead of any earlier
    /// request. `Int64.max` disarms. Called under the engine's lock, so calls are ordered.
    func arm(at deadline: Int64)
}
