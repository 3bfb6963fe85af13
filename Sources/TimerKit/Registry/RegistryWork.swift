/// What a ``TimerRegistry`` entry runs: a ``ScheduledTimer`` on the registry's clock, or a
/// ``CalendarTimer``. The operations by key act through it.
protocol RegistryWork: AnyObject, Sendable {
    func invalidate()
    var isRunUnderWay: Bool { get }
    @discardableResult func suspend() -> Bool
    @discardableResult func resume() -> Bool
    @discardableResult func fire() -> Bool
    var nextDeadline: TimerInstant? { get }
    var interval: Duration? { get }
    var fireCount: Int { get }
    var isSuspended: Bool { get }
    var isValid: Bool { get }
}

extension ScheduledTimer: RegistryWork {}

extension CalendarTimer: RegistryWork {
    /// The next occurrence as an instant of the timer's clock.
    var nextDeadline: TimerInstant? {
        nextOccurrence.map { TimerInstant(kind: clock.kind, nanoseconds: TimerInstant($0).nanoseconds) }
    }

    var interval: Duration? { nil }
}
