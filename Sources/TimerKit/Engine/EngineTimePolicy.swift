/// What makes a virtual clock's engine differ from a system clock's, decided once when the engine
/// is made: the engine asks these questions instead of branching on "is this virtual".
///
/// Both kinds run the same store, the same state machine and the same delivery; a virtual clock
/// differs only in where its time comes from and in being deterministic: it fires at the deadline
/// itself, runs every delivery before `advance` returns, and keeps one store, so that ties fire
/// in exact creation order.
struct EngineTimePolicy {
    /// Whether the engine's time is the system clock's (else the virtual clock's own instant,
    /// moved only by `advance`).
    let readsSystemClock: Bool
    /// Whether a driver wakes the engine, late by a measured latency: then the engine arms it, aims
    /// into tolerance windows short of their end (C3), wakes early for high-precision deadlines
    /// and waits for them actively (C2). A virtual clock fires at each deadline itself.
    let hasDriver: Bool
    /// Whether a delivery runs before the call that started it returns — on the calling thread, or
    /// synchronously on the timer's queue — so that advancing a virtual clock is deterministic.
    let deliversInline: Bool
    /// Whether a delivery that used its run budget yields its target to others (a system clock's
    /// engine thread and queues); a virtual clock's advance runs every due run in order instead.
    let yieldsAfterBudget: Bool
    /// Whether timers and callbacks go to the shard of the thread that creates them, four per core
    /// (a system clock: schedules from every thread), or all into one shard (a virtual clock: exact
    /// creation order among ties).
    let shardsByThread: Bool

    /// A system clock's engine, woken by its driver.
    static let system = EngineTimePolicy(readsSystemClock: true, hasDriver: true, deliversInline: false, yieldsAfterBudget: true, shardsByThread: true)

    /// A virtual clock's engine, moved by `advance`.
    static let virtual = EngineTimePolicy(readsSystemClock: false, hasDriver: false, deliversInline: true, yieldsAfterBudget: false, shardsByThread: false)
}
