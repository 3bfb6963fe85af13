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
/// ## Shards and locks
///
/// Pending work lives in ``EngineShard``s, each a store behind a lock of its own: a system clock
/// has four per core, and a timer or callback lives in the shard of the thread that created it,
/// so that threads on different cores — a server's, scheduling timeouts from every thread —
/// never share a lock; a virtual clock has one, so that ties fire in exact creation order. Any
/// thread that stores a key earlier than ``armed`` lowers it by compare-exchange and arms the
/// driver; the driver's wake-up resets it.
///
/// Lock discipline: a shard's lock guards its store and, by convention, every field of every timer
/// in it marked "guarded by its shard's lock". No two shard locks are held at once; the arming
/// lock is taken last. Decisions are made under a lock; handlers run, waiters are resumed and
/// captured values are released only after the locks are let go. What only the driver's thread
/// touches (the wake-up's buffers, its latency and delivery reserve) needs no lock.
///
/// Virtual and system time differ only by ``policy`` (``EngineTimePolicy``); virtual time's own
/// entry points are in `TimerEngine+VirtualTime.swift`.
final class TimerEngine: @unchecked Sendable {
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

    /// Keeps the fields below off the cache line of the object's header: its reference count is
    /// written by every retain and release of the engine — a `TimerClock` value made or copied on
    /// any thread — and a core that reads `kind` or `shardStates` for every timer operation would
    /// miss on that line each time another core wrote it (measured: ScheduledTimers on two threads
    /// 8.0 → 10.2 M pairs/s).
    private let headerLinePadding: (Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0)
    let kind: TimerClock.Kind
    let isShared: Bool
    /// What distinguishes this clock's time: system or virtual.
    let policy: EngineTimePolicy
    /// The pending timers and callbacks: a system clock's in four shards per core, a virtual
    /// clock's in one.
    let shards: [EngineShard]
    /// The shards' locked states, unretained, for the hot paths (no reference counting on a shared
    /// object, whose count would bounce between cores); `shards` keeps them alive.
    let shardStates: UnsafeMutablePointer<Unmanaged<Locked<EngineShard.State>>>
    /// The number of shards less one (a power of two less one).
    let shardMask: Int
    /// The deadline the driver is armed for; `Int64.max` when disarmed. Lowered by compare-exchange
    /// from any thread that stores an earlier key (under whichever lock guards that store); reset
    /// by the driver's thread when it wakes. ``armDriver()`` arms the driver for its current value.
    let armed = Atomic<Int64>(.max)
    /// Serializes the calls into the driver, so that the last one arms for the current minimum.
    let armLock = Locked(())
    /// `wakeUpLatency`, readable from any thread (a timer's or callback's insert, a wake-up's
    /// decision to wait actively).
    let wakeUpLatencyMirror = Atomic<Int64>(WakeUpLatency().nanoseconds)
    /// Whether the engine was shut down; each shard's `isShutDown` follows, under its lock.
    let hasShutDown = Atomic<Bool>(false)
    /// How many times the engine woke (a virtual clock: how many due entries it took).
    let wakeUps = Atomic<Int>(0)
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
    /// The shards' due work with its deadlines, before the merge.
    var shardDue: [(work: TimerStore.DueWork, deadline: Int64)] = []
    /// High-precision timers taken out of the store before their deadlines, with those deadlines.
    var preciseBuffer: [(timer: ScheduledTimer, deadline: Int64)] = []
    /// How long a wake-up's deliveries take, as the driver learns it — a decaying maximum, in
    /// nanoseconds: the driver wakes that much before the end of a tolerance window, so that the
    /// last fire of the batch it takes still lands in the window (C3).
    var deliveryReserve = DeliveryReserve()
    /// How late the driver wakes: what the engine keeps back from the end of a tolerance window
    /// (C3) and how early it wakes for a high-precision deadline. Other threads read its mirror,
    /// ``wakeUpLatencyMirror``.
    var wakeUpLatency = WakeUpLatency()
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
        let wanted = min(max(4 * ProcessInfo.processInfo.activeProcessorCount, 4), EngineShard.maximumCount)
        let shardCount = policy.shardsByThread ? 1 << (Int.bitWidth - (wanted - 1).leadingZeroBitCount) : 1
        shards = (0..<shardCount).map { _ in EngineShard(layout: layout, now: start, virtualStart: virtualStart) }
        shardStates = .allocate(capacity: shardCount)
        for (number, shard) in shards.enumerated() { (shardStates + number).initialize(to: .passUnretained(shard.state)) }
        shardMask = shardCount - 1
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
        policy.readsSystemClock ? SystemClock.now(kind) : shards[0].state.withLock { $0.virtualTime.now }
    }

    /// The current instant, under a shard's lock (a virtual clock's one shard holds its instant).
    @inline(__always)
    func now(_ shard: EngineShard.State) -> Int64 {
        policy.readsSystemClock ? SystemClock.now(kind) : shard.virtualTime.now
    }

    /// The shard that work created on the calling thread lives in.
    @inline(__always)
    var currentShard: Int { Int(ctk_thread_slot()) & shardMask }

    /// Runs `body` under the lock of shard `number`, without reference counting on the shard.
    @inline(__always)
    func withShard<Result>(_ number: Int, _ body: (inout EngineShard.State) -> Result) -> Result {
        shardStates[number]._withUnsafeGuaranteedRef { $0.withLock(body) }
    }

    var pendingCount: Int {
        shards.reduce(0) { count, shard in count + shard.state.withLock { $0.store.count } }
    }

    var wakeUpCount: Int { wakeUps.load(ordering: .relaxed) }

    // MARK: Registering

    /// Registers a new timer in its shard: gives it its creation number and, unless it starts
    /// suspended, stores its first deadline.
    func register(_ timer: ScheduledTimer, suspended: Bool) throws(TimerError) {
        let registered = withShard(Int(timer.shard)) { shard -> Bool in
            guard !shard.isShutDown else { return false }
            timer.id = shard.nextSequence
            shard.nextSequence &+= 1
            if timer.onInvalidate != nil {
                shard.watched[ObjectIdentifier(timer)] = WeakTimer(timer)
                if shard.watched.count > 2 * shard.watchedAfterSweep + 64 {
                    shard.watched = shard.watched.filter { $0.value.timer != nil }
                    shard.watchedAfterSweep = shard.watched.count
                }
            }
            _ = carryOut(timer.machine.register(suspended: suspended), for: timer, &shard)
            return true
        }
        guard registered else { throw .clockShutDown }
    }

    // MARK: Shutting down

    /// Invalidates every timer, drops every callback and stops the driver. Idempotent.
    func shutdown() {
        guard !hasShutDown.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Wake the driver at once so that it sees the shutdown and ends.
        armNow()
        for shard in shards {
            // Nothing can be stored in a shard once it is shut down.
            let (leftovers, released) = shard.state.withLock { shard -> ([(ScheduledTimer.Handler?, (@Sendable () -> Void)?)], [TimerWork]) in
                shard.isShutDown = true
                let works = shard.store.removeAll()
                var timers: [ScheduledTimer] = []
                for case .timer(let timer) in works {
                    timer.storeSlot = -1
                    timers.append(timer)
                }
                timers += shard.watched.values.compactMap(\.timer)
                shard.watched = [:]
                return (timers.map { $0.invalidateLocked() }, works)
            }
            // Handlers and callbacks are released, and hooks called, outside the locks.
            _ = released
            for (_, onInvalidate) in leftovers { onInvalidate?() }
        }
    }
}
