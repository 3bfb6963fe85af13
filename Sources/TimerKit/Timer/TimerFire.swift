/// What one run of a timer's handler stands for (C5).
///
/// A fire normally stands for one deadline. When deadlines were missed (a slow handler, a busy
/// queue, a suspended timer, a sleeping machine) a coalesced fire stands for several, and
/// ``deadlineCount`` says how many; under ``MissedDeadlinePolicy/skip`` the missed deadlines have no
/// fire, and the next fire says how many there were in ``skippedDeadlineCount``. A run started by
/// ``ScheduledTimer/fire()`` stands for none.
///
/// So under every policy the deadlines add up: the scheduled fires of a repeating timer, taken in
/// order, account for each grid deadline exactly once through `deadlineCount + skippedDeadlineCount`
/// (the skipped ones before the fire, then the ones it stands for).
public struct TimerFire: Sendable, Hashable, CustomStringConvertible {
    /// The deadline this fire was scheduled for: the earliest one it stands for, or the moment
    /// ``ScheduledTimer/fire()`` was called.
    public let scheduledDeadline: TimerInstant

    /// When the engine decided to run the handler, on the timer's clock.
    public let firedAt: TimerInstant

    /// How many deadlines this fire stands for: 1 normally; more after missed deadlines, under
    /// ``MissedDeadlinePolicy/coalesce`` or for the last fire of a capped
    /// ``MissedDeadlinePolicy/burst(maxFires:)``; 0 for a run started by ``ScheduledTimer/fire()``.
    public let deadlineCount: Int

    /// How many grid deadlines before ``scheduledDeadline`` passed without a run of their own and are
    /// not counted in ``deadlineCount``: the deadlines ``MissedDeadlinePolicy/skip`` skipped since
    /// the previous fire. Always 0 under the other policies, which count missed deadlines in
    /// ``deadlineCount``.
    public let skippedDeadlineCount: Int

    /// The 1-based number of this handler run in the timer's life.
    public let sequenceNumber: Int

    /// How long after ``scheduledDeadline`` the fire happened. Never negative (C2).
    public var lateness: Duration { firedAt - scheduledDeadline }

    /// Whether this run was started by ``ScheduledTimer/fire()`` rather than by a deadline.
    public var isManual: Bool { deadlineCount == 0 }

    /// Creates a fire, as the engine reports one (for tests and for code that forwards fires).
    public init(scheduledDeadline: TimerInstant, firedAt: TimerInstant, deadlineCount: Int, skippedDeadlineCount: Int = 0, sequenceNumber: Int) {
        self.scheduledDeadline = scheduledDeadline
        self.firedAt = firedAt
        self.deadlineCount = deadlineCount
        self.skippedDeadlineCount = skippedDeadlineCount
        self.sequenceNumber = sequenceNumber
    }

    public var description: String {
        let skipped = skippedDeadlineCount == 0 ? "" : ", skipped before: \(skippedDeadlineCount)"
        return "TimerFire(#\(sequenceNumber), deadline: \(scheduledDeadline), lateness: \(lateness), deadlines: \(deadlineCount)\(skipped))"
    }
}

extension TimerFire {
    /// The fire a timer's state machine decided, on its clock.
    init(_ fire: TimerStateMachine.Fire, kind: TimerClock.Kind) {
        self.init(
            scheduledDeadline: TimerInstant(kind: kind, nanoseconds: fire.scheduledDeadline),
            firedAt: TimerInstant(kind: kind, nanoseconds: fire.firedAt),
            deadlineCount: fire.deadlineCount,
            skippedDeadlineCount: fire.skippedDeadlineCount,
            sequenceNumber: fire.sequenceNumber)
    }
}
