import CTimerKitShims
import Dispatch
import Foundation
import Synchronization

/// One clock's engine: every pending timer of the clock in its stores, woken by one driver that
/// sleeps until the earliest deadline (C16).
///
/// ## The flow of a fire (one way)
///
/// 1. **Schedule.** A timer's call — create, `resume()`, `reschedule(at:every:)` — is a transition
///    of its ``TimerStateMachine``, which returns a ``TimerStateMachine/StoreAction``; the engine
///    carries it out on its store (``carryOut(_:for:_:)``, `TimerEngine+Arming.swift`) and lowers
///    ``armed`` if the new key comes first.
/// 2. **Engine.** The driver wakes; ``serviceDueTimers()`` (`TimerEngine+WakeUp.swift`) takes every
///    due entry out of the stores, merges the shards' callbacks in deadline order, and marks each
///    timer taken (``TimerStateMachine/takeForDelivery()``).
/// 3. **Delivery.** ``drain(_:)`` (`TimerEngine+Delivery.swift`) asks the machine for its next
///    step, under the lock, and acts on it outside: a run of the handler through the
///    ``RunGate``, or a store insert for a timer that is not due. The machine never calls the
///    engine, and no timer method is called back from here.
///
/// ## Stores and locks
///
/// The engine's own store, behind `state`, holds the timers (and, on a virtual clock, every
/// callback, so that ties fire in exact creation order); a system clock's callbacks — the
/// timeouts a server schedules from every thread — live in ``CallbackShard``s, four per core, each
/// with its own lock and store, so that threads on different cores never share one
/// (`TimerEngine+Callbacks.swift`). Any thread that stores a key earlier than ``armed`` lowers it
/// by compare-exchange and arms the driver; the driver's wake-up resets it.
///
/// Lock discipline: `state` guards the engine's store and, by convention, every field of every
/// timer of this engine marked "guarded by the engine lock"; each shard's lock guards its store.
/// No two of them are held at once, except the arming lock, taken last. Decisions are made under
/// a lock; handlers run, waiters are resumed and captured values are released only after the
/// locks are let go.
///
/// Virtual and system time differ only by ``policy`` (``EngineTimePolicy``); virtual time's own
/// entry points are in `TimerEngine+VirtualTime.swift`.
final class TimerEngine: @unchecked Sendable {
    struct State {
        var store: TimerStore
        var nextTimerID: UInt64 = 0
        var isShutDown = false
        var wakeUps = 0
        /// A virtual clock's instant and whether it is being advanced.
        var virtualTime: VirtualTime
        /// Engine-thread timers that used up their run budget and wait for their next turn.
        var ready: [ScheduledTimer] = []
        /// How late the driver wakes: what the engine keeps back from the end of a tolerance window
        /// (C3) and how early it wakes for a high-precision deadline.
        var wakeUpLatency = WakeUpLatency()
        /// Tasks waiting in `ScheduledCallback.cancelAndWait()` for a run under way, by entry.
        var callbackWaiters: [Int32: [CheckedContinuation<Void, Never>]] = [:]
        /// Timers with an invalidation hook (those behind an `AsyncSequence`), held weakly, so that
        /// a shutdown reaches them even while they are suspended or out of the store.
        var watched: [ObjectIdentifier: WeakTimer] = [:]
        /// `watched.count` after the last sweep of released timers.
        var watchedAfterSweep = 0

        init(layout: TimerStore.Layout, now: Int64, virtualStart: Int64) {
            store = TimerStore(layout: layout, now: now)
            virtualTime = VirtualTime(now: virtualStart)
        }
    }

    final class WeakTimer {
        weak var timer: ScheduledTimer?
        init(_ timer: ScheduledTimer) { self.timer = timer }
    }

    /// How many handler runs one delivery may make before the timer yields its target to the
    /// others (a slow repeating timer, a burst, or `fire()` called in a loop cannot monopolize the
    /// engine thread or a queue).
    static let runBudget = 16

    /// How many passes over the store one wake-up may make (see ``serviceDueTimers()``).
    static let passesPerWakeUp = 64

    // MARK: Stored properties (all of them: the extensions add behaviour only)

    let kind: TimerClock.Kind
    let isShared: Bool
    /// What distinguishes this clock's time: system or virtual.
    let policy: EngineTimePolicy
    let state: Locked<State>
    /// The callbacks of a system clock, four shards per core (empty for a virtual clock, whose
    /// callbacks share the engine's store so that they fire in exact creation order).
    let shards: [CallbackShard]
    /// The shards' locked states, unretained, for the hot paths (no reference counting on a shared
    /// object, whose count would bounce between cores); `shards` keeps them alive.
    let shardStates: UnsafeMutablePointer<Unmanaged<Locked<CallbackShard.State>>>
    /// The number of shards less one (a power of two less one); -1 without shards.
    let shardMask: Int
    /// The deadline the driver is armed for; `Int64.max` when disarmed. Lowered by compare-exchange
    /// from any thread that stores an earlier key (under whichever lock guards that store); reset
    /// by the driver's thread when it wakes. ``armDriver()`` arms the driver for its current value.
    let armed = Atomic<Int64>(.max)
    /// Serializes the calls into the driver, so that the last one arms for the current minimum.
    let armLock = Locked(())
    /// `state.wakeUpLatency`, readable without the engine's lock (a shard's insert, a wake-up's
    /// decision to wait actively).
    let wakeUpLatencyMirror = Atomic<Int64>(WakeUpLatency().nanoseconds)
    /// `state.isShutDown`, readable without the lock (from a timer's `deinit`).
    let hasShutDown = Atomic<Bool>(false)
    /// How many high-precision fires the driver woke early for and waited for actively (tests).
    let preciseWaits = Atomic<Int>(0)
    /// Where the tasks TimerKit starts for this clock run: a virtual clock's executor, so that its
    /// async `advance` waits for them; `nil` (the global executor) for the system clocks.
    let taskExecutor: (any TaskExecutor)?
    /// The tasks sleeping on a virtual clock, for its report of leaked sleepers.
    let sleepers = Locked<[ObjectIdentifier: Sleeper]>([:])
    let driver: (any EngineDriver)?

    // The wake-up's buffers, reused from wake-up to wake-up (no allocation on the common path):
    // touched only by ``serviceDueTimers()`` and what it calls, which the driver never runs
    // concurrently with itself.

    /// Work due at the current wake-up.
    var dueBuffer: [TimerStore.DueWork] = []
    /// Deadlines of `dueBuffer`'s entries, for merging the shards' due callbacks in deadline order.
    var dueDeadlines: [Int64] = []
    /// The shards' due callbacks with their deadlines, before the merge.
    var shardDue: [(work: TimerStore.DueWork, deadline: Int64)] = []
    /// High-precision timers taken out of the store before their deadlines, with those deadlines.
    var preciseBuffer: [(timer: ScheduledTimer, deadline: Int64)] = []
    /// How long a wake-up's deliveries take, as the driver learns it — a decaying maximum, in
    /// nanoseconds: the driver wakes that much before the end of a tolerance window, so that the
    /// last fire of the batch it takes still lands in the window (C3).
    var deliveryReserve = DeliveryReserve()
    /// The entries of engine-thread callbacks that ran, to be freed together.
    var finishedBuffer: [Int32] = []

    static let sharedContinuous = TimerEngine(kind: .continuous, isShared: true)
    static let sharedSuspending = TimerEngine(kind: .suspending, isShared: true)
    static let sharedWall = TimerEngine(kind: .wall, isShared: true)

    /// Creates a system-clock engine with the platform's driver, or a virtual one with none.
    convenience init(kind: TimerClock.Kind, isShared: Bool, layout: TimerStore.Layout = .wheel) {
        let driver = kind == .virtual ? nil : EngineDriverKind.serving(kind).make(for: kind)
        self.init(kind: kind, isShared: isShared, driver: driver, layout: layout)
    }

    /// Creates an engine: a system clock's with a `driver`, a virtual clock's without one.
    init(
        kind: TimerClock.Kind, isShared: Bool, driver: (any EngineDriver)?, virtualStart: Int64 = 0, layout: TimerStore.Layout = .wheel,
        taskExecutor: (any TaskExecutor)? = nil
    ) {
        self.kind = kind
        self.taskExecutor = taskExecutor
        self.isShared = isShared
        self.driver = driver
        let policy = driver == nil ? EngineTimePolicy.virtual : .system
        self.policy = policy
        let start = policy.readsSystemClock ? SystemClock.now(kind) : virtualStart
        // Four shards per core, rounded up to a power of two, between 4 and 16: more threads than
        // cores is the common case (a server's thread pools), and a thread that shares its shard
        // with another can be preempted while it holds the lock (measured: 8 threads on 2 cores
        // with 2 shards did 30 % fewer pairs than 2 threads).
        let wanted = min(max(4 * ProcessInfo.processInfo.activeProcessorCount, 4), CallbackShard.maximumCount)
        let shardCount = policy.shardsCallbacks ? 1 << (Int.bitWidth - (wanted - 1).leadingZeroBitCount) : 0
        shards = (0..<shardCount).map { _ in CallbackShard(layout: layout, now: start) }
        shardStates = .allocate(capacity: max(shardCount, 1))
        for (number, shard) in shards.enumerated() { (shardStates + number).initialize(to: .passUnretained(shard.state)) }
        shardMask = shardCount - 1
        self.state = Locked(State(layout: layout, now: start, virtualStart: virtualStart))
        driver?.start(serving: self)
    }

    deinit {
        shardStates.deallocate()
    }

    /// Whether this is a virtual clock's engine.
    var isVirtual: Bool { !policy.readsSystemClock }

    /// Whether the caller runs on this engine's driver — its thread, or its queue (tests: where
    /// engine-thread deliveries run). Always `false` on a virtual clock.
    var isOnDriver: Bool { driver?.isCurrent ?? false }

    /// The system's id of the driver's own thread, if it has one of its own (the kernel-timer
    /// driver, once its thread has started); `nil` for a dispatch driver, whose source runs on
    /// whichever thread its queue gets, and for a virtual clock.
    var driverThread: UInt64? {
        #if os(Linux) || os(Android) || canImport(Darwin)
        (driver as? KernelTimerDriver)?.thread
        #else
        nil
        #endif
    }

    /// The current instant on this engine's clock, in nanoseconds.
    func now() -> Int64 {
        policy.readsSystemClock ? SystemClock.now(kind) : state.withLock { $0.virtualTime.now }
    }

    /// The current instant, under the lock.
    @inline(__always)
    func now(_ state: State) -> Int64 {
        policy.readsSystemClock ? SystemClock.now(kind) : state.virtualTime.now
    }

    var pendingCount: Int {
        state.withLock { $0.store.count } + shards.reduce(0) { count, shard in count + shard.state.withLock { $0.store.count } }
    }

    var wakeUpCount: Int { state.withLock { $0.wakeUps } }

    // MARK: Registering

    /// Registers a new timer: gives it its creation number and, unless it starts suspended, stores
    /// its first deadline.
    func register(_ timer: ScheduledTimer, suspended: Bool) throws(TimerError) {
        try state.withLock { (state) throws(TimerError) in
            guard !state.isShutDown else { throw .clockShutDown }
            timer.id = UInt32(truncatingIfNeeded: state.nextTimerID)
            state.nextTimerID &+= 1
            if timer.onInvalidate != nil {
                state.watched[ObjectIdentifier(timer)] = WeakTimer(timer)
                if state.watched.count > 2 * state.watchedAfterSweep + 64 {
                    state.watched = state.watched.filter { $0.value.timer != nil }
                    state.watchedAfterSweep = state.watched.count
                }
            }
            _ = carryOut(timer.machine.register(suspended: suspended), for: timer, &state)
        }
    }

    // MARK: Shutting down

    /// Invalidates every timer and stops the driver. Idempotent.
    func shutdown() {
        let (leftovers, released) = state.withLock { state -> ([(ScheduledTimer.Handler?, (@Sendable () -> Void)?)], [TimerWork]) in
            guard !state.isShutDown else { return ([], []) }
            state.isShutDown = true
            hasShutDown.store(true, ordering: .releasing)
            // Wake the driver at once so that it sees the shutdown and ends.
            armNow()
            let works = state.store.removeAll()
            var timers: [ScheduledTimer] = []
            for case .timer(let timer) in works {
                timer.storeSlot = -1
                timers.append(timer)
            }
            timers += state.watched.values.compactMap(\.timer)
            state.watched = [:]
            return (timers.map { $0.invalidateLocked() }, works)
        }
        // The shards' callbacks: none can be stored once their shard is shut down.
        let shardWorks = shards.map { shard in
            shard.state.withLock { shard -> [TimerWork] in
                shard.isShutDown = true
                return shard.store.removeAll()
            }
        }
        // Handlers and callbacks are released, and hooks called, outside the locks.
        _ = released
        _ = shardWorks
        for (_, onInvalidate) in leftovers { onInvalidate?() }
    }
}
