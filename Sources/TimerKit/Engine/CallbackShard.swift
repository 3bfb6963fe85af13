/// One shard of a system clock's callbacks: a store and a lock of its own, so that threads on
/// different cores schedule and cancel without sharing a lock or a cache line.
///
/// A system-clock engine has four shards per core, a power of two between 4 and 16 (more threads
/// than cores is the common case, and two threads that share a shard stall each other when one is
/// preempted holding its lock); each thread uses the shard its thread slot names, so one thread's
/// callbacks always share a store and keep their order. The
/// engine's own store keeps the timers (whose fields its lock guards) and, on a virtual clock,
/// every callback. A callback's index names its shard in its high bits (``CallbackShard/encode``):
/// 0 is the engine's own store.
final class CallbackShard: @unchecked Sendable {
    struct State {
        var store: TimerStore
        var nextSequence: UInt32 = 0
        /// Tasks waiting in `ScheduledCallback.cancelAndWait()` for a run under way, by raw index.
        var callbackWaiters: [Int32: [CheckedContinuation<Void, Never>]] = [:]
        var isShutDown = false
    }

    /// Bits of an index below the shard number.
    static let indexBits: Int32 = 26
    static let rawMask: Int32 = (1 << indexBits) - 1
    /// The most shards an engine has (up to 31 would fit above the raw index in an `Int32`).
    static let maximumCount = 16

    let state: Locked<State>

    init(layout: TimerStore.Layout, now: Int64) {
        state = Locked(State(store: TimerStore(layout: layout, now: now)), padded: true)
    }

    /// The index handed out for raw index `raw` of shard `number` (1-based; 0 is the engine's store).
    @inline(__always)
    static func encode(_ raw: Int32, shard number: Int) -> Int32 {
        precondition(raw <= rawMask, "TimerKit: more than 67 million callbacks pending in one shard")
        return raw | Int32(number) << indexBits
    }

    /// The shard number (0 for the engine's own store) and the raw index of an index.
    @inline(__always)
    static func decode(_ index: Int32) -> (shard: Int, raw: Int32) {
        (Int(index >> indexBits), index & rawMask)
    }
}
