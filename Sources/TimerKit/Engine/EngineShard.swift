/// One shard of an engine's pending work: a store and a lock of its own, so that threads on
/// different cores schedule, reschedule and cancel — timers and callbacks alike — without sharing a
/// lock or a cache line.
///
/// A system-clock engine has four shards per core, a power of two between 4 and 16 (more threads
/// than cores is the common case, and two threads that share a shard stall each other when one is
/// preempted holding its lock). A timer or callback lives in the shard of the thread that created
/// it, so one thread's timers and callbacks share a store and keep their creation order; every
/// later call on it, from any thread, takes that shard's lock. A virtual clock's engine has one
/// shard, so that ties fire in exact creation order.
///
/// A shard's lock guards its store and, by convention, every field of every timer that lives in it
/// marked "guarded by its shard's lock". A callback's index names its shard in its high bits
/// (``encode(_:shard:)``).
final class EngineShard: @unchecked Sendable {
    struct State {
        var store: TimerStore
        /// Creation order of the shard's timers and callbacks (truncated to 32 bits, compared with
        /// wrapping arithmetic): breaks ties between equal keys.
        var nextSequence: UInt32 = 0
        var isShutDown = false
        /// Tasks waiting in `ScheduledCallback.cancelAndWait()` for a run under way, by raw index.
        var callbackWaiters: [Int32: [CheckedContinuation<Void, Never>]] = [:]
        /// Tasks waiting in `ScheduledTimer.invalidateAndWait()` for a run under way, by timer. A
        /// timer is alive while it has waiters: its run holds it.
        var runWaiters: [ObjectIdentifier: [CheckedContinuation<Void, Never>]] = [:]
        /// Engine-thread timers of this shard that used up their run budget and wait for their
        /// next turn.
        var ready: [ScheduledTimer] = []
        /// The shard's timers with an invalidation hook (those behind an `AsyncSequence`), held
        /// weakly, so that a shutdown reaches them even while they are suspended or out of the store.
        var watched: [ObjectIdentifier: TimerEngine.WeakTimer] = [:]
        /// `watched.count` after the last sweep of released timers.
        var watchedAfterSweep = 0
        /// A virtual clock's instant and whether it is being advanced: kept in its engine's one
        /// shard, under the lock that guards its store. Unused on a system clock.
        var virtualTime: TimerEngine.VirtualTime
    }

    /// Bits of an index below the shard number.
    static let indexBits: Int32 = 26
    static let rawMask: Int32 = (1 << indexBits) - 1
    /// The most shards an engine has (up to 31 would fit above the raw index in an `Int32`; a timer
    /// keeps its shard's number in seven bits).
    static let maximumCount = 16

    let state: Locked<State>

    init(layout: TimerStore.Layout, now: Int64, virtualStart: Int64) {
        state = Locked(State(store: TimerStore(layout: layout, now: now), virtualTime: .init(now: virtualStart)), padded: true)
    }

    /// The index handed out for raw index `raw` of the shard numbered `number` (from 0).
    @inline(__always)
    static func encode(_ raw: Int32, shard number: Int) -> Int32 {
        precondition(raw <= rawMask, "TimerKit: more than 67 million callbacks pending in one shard")
        return raw | Int32(number) << indexBits
    }

    /// The shard number and the raw index of an index.
    @inline(__always)
    static func decode(_ index: Int32) -> (shard: Int, raw: Int32) {
        (Int(index >> indexBits), index & rawMask)
    }
}
