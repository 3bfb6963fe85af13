/// Why a durable-timer operation failed. Each case says what happened and what to do in its
/// description; nothing stored is lost by any of them.
public enum DurableTimerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The database could not be opened or created at the path (a missing folder, no permission).
    case cannotOpen(path: String, reason: String)
    /// The file is not a database, or is damaged. Restore it from a backup; TimerKit never rewrites
    /// a file it cannot read.
    case corrupt(path: String, reason: String)
    /// Another connection held the database locked for longer than the busy timeout. Nothing was
    /// written; the call can be retried.
    case locked(reason: String)
    /// The disk (or the database's size limit) is full. Nothing was written.
    case full(reason: String)
    /// Any other failure of the store, with its message.
    case store(reason: String)
    /// The clock is not a calendar clock: durable timers run on `TimerClock.wall` (or a virtual
    /// clock whose time is read as nanoseconds since 1970).
    case notACalendarClock(String)
    /// A key, namespace or handler name that is empty, longer than
    /// ``DurableTimers/maximumKeyLength`` (512) bytes of UTF-8, or holds a control character
    /// (U+0000–U+001F, U+007F: NUL, which PostgreSQL cannot store, among them).
    case invalidKey(String)
    /// A schedule for a handler name that was never registered with this runner.
    case unknownHandler(String)
    /// `register` of a name that is already registered.
    case handlerAlreadyRegistered(String)
    /// A payload that does not encode to JSON, or a stored payload that does not decode as the
    /// registered handler's type (the timer is parked as failed, never run with a wrong value).
    case payload(key: String, reason: String)
    /// A non-positive interval, a negative delay or window, a burst limit below 1, or a duration
    /// whose nanoseconds overflow 64 bits.
    case invalidDuration(String)
    /// A calendar rule with a field out of range.
    case invalidRule(String)
    /// A date that is NaN or infinite, or outside ``DurableTimers/earliestDate`` ..<
    /// ``DurableTimers/latestDate`` (1970 to 2200): deadlines are kept as 64-bit nanoseconds since
    /// 1970, and dates outside the range would overflow the runner's arithmetic.
    case invalidDate(String)
    /// A schedule with ``DurableConflict/fail`` under a key that holds a timer.
    case keyInUse(String)
    /// No timer is stored under the key.
    case notFound(String)
    /// A claim's lease passed without a renewal while its handler ran (the process was frozen, the
    /// store unreachable, or the host clock stepped), and another claim may have taken the
    /// occurrence: the handler's task is cancelled, and this run's end changes nothing if another
    /// runner holds it now (at-least-once).
    case leaseLost(String)
    /// The runner has shut down.
    case shutDown
    /// The database's schema does not fit this build: it is newer (a later release wrote it),
    /// older with ``DurableTimers/SchemaUpgrade/verifyOnly``, or a table named like TimerKit's is
    /// someone else's. The reason names the versions and what to do; nothing was changed.
    case schema(reason: String)
    /// The database server cannot be reached (it is down, restarting, or the network is), or did
    /// not answer within the busy timeout. A write may not have happened: try again; runners back
    /// off and resume by themselves.
    case unreachable(reason: String)
    /// The host's clock differs from the database server's by more than the allowed skew. Decisions
    /// use the database's time regardless; this reports a host whose clock needs attention.
    case clockSkew(milliseconds: Int64)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open the durable-timer database at \(path): \(reason)"
        case .corrupt(let path, let reason): "the durable-timer database at \(path) is not a database or is damaged (\(reason)); restore it from a backup"
        case .locked(let reason):
            "the durable-timer database stayed locked by another connection past the busy timeout (\(reason)); nothing was written, try again"
        case .full(let reason): "the disk holding the durable-timer database is full (\(reason)); nothing was written"
        case .store(let reason): "the durable-timer store failed: \(reason)"
        case .notACalendarClock(let kind): "durable timers need the wall clock or a virtual clock, not the \(kind) clock: their deadlines are calendar instants"
        case .invalidKey(let key):
            "invalid durable-timer key, namespace or handler name '\(key.debugDescription.dropFirst().dropLast())': it must be 1 to 512 bytes of UTF-8 without control characters"
        case .unknownHandler(let name): "no handler named '\(name)' is registered: register it before scheduling timers for it"
        case .handlerAlreadyRegistered(let name): "a handler named '\(name)' is registered already"
        case .payload(let key, let reason): "the payload of durable timer '\(key)' does not encode or decode: \(reason)"
        case .invalidDuration(let reason): "invalid duration: \(reason)"
        case .invalidRule(let reason): "invalid calendar rule: \(reason)"
        case .invalidDate(let reason): "invalid date: \(reason); durable timers keep dates from 1970-01-01 up to 2200-01-01 (UTC)"
        case .keyInUse(let key): "a durable timer is stored under '\(key)' already"
        case .notFound(let key): "no durable timer is stored under '\(key)'"
        case .leaseLost(let key):
            "the claim on durable timer '\(key)' was lost: its lease passed without a renewal, and another runner may run the occurrence (at-least-once); the handler is cancelled if it still runs, and this run's end is not written"
        case .shutDown: "the durable-timer runner has shut down"
        case .schema(let reason): "the durable-timer database's schema does not fit this build: \(reason)"
        case .unreachable(let reason): "the durable-timer database cannot be reached (\(reason)); the write may not have happened, try again"
        case .clockSkew(let milliseconds):
            "this host's clock is \(milliseconds) ms off the database's; timers still follow the database's time, but fix the host's clock (NTP)"
        }
    }
}
