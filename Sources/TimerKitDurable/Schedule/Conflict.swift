/// What a schedule under a key that already holds a timer does (`TimerRegistry`'s vocabulary).
public enum DurableConflict: Sendable, Hashable {
    /// The new timer replaces the old one (the default). A run of the old one under way finishes;
    /// its completion no longer touches the key.
    case replace
    /// The old timer stays; the schedule returns `false`.
    case keep
    /// The old timer stays; the schedule throws ``DurableTimerError/keyInUse(_:)``.
    case fail
}
