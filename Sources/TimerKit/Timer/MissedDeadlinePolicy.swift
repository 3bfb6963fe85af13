/// What a repeating timer does about deadlines it missed (C5).
///
/// A deadline is *missed* when a later deadline of the same timer has also passed by the time the
/// timer can fire (a slow handler, a busy queue, an overloaded engine, a sleeping machine), or when
/// it passed while the timer was suspended. A deadline that is merely late — its successor has not
/// come yet — is fired normally under every policy.
///
/// Whatever the policy, the deadlines stay on their grid: after missed deadlines the timer continues
/// at the first grid deadline after now (C4). One-shot timers ignore the policy: their one deadline
/// is always fired.
public enum MissedDeadlinePolicy: Sendable, Hashable, CustomStringConvertible {
    /// Fire once now, standing for every missed deadline (``TimerFire/deadlineCount``), then
    /// continue on the grid. `Foundation.Timer`'s behaviour, and the default.
    case coalesce
    /// Fire nothing for the missed deadlines; continue at the next grid deadline.
    case skip
    /// Fire once per missed deadline, back to back, but at most `maxFires` times; the last of those
    /// fires stands for the rest (its ``TimerFire/deadlineCount`` says how many).
    case burst(maxFires: Int)

    public var description: String {
        switch self {
        case .coalesce: "coalesce"
        case .skip: "skip"
        case .burst(let maxFires): "burst(maxFires: \(maxFires))"
        }
    }

    func validated() throws(TimerError) -> MissedDeadlinePolicy {
        if case .burst(let maxFires) = self, maxFires < 1 { throw .invalidBurstLimit(maxFires) }
        return self
    }
}
