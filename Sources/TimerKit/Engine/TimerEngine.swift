import CTimerKitShims
import Dispatch
import Foundation
import Synchronization

/// One clock's engine: every pending timer of the clock in its stores, woken by one driver that
/// sleeps until the earliest deadline (C16).
///
/// Stores: the engine's own, behind `state`, holds the timers (and, on a virtual clock, every
/// callback, so that ties fire in exact creation order); a system clock's callbacks — the
/// timeouts a server schedules from every thread — live in ``CallbackShard``s, four per core, each with
/// its own lock and store, so that threads on different cores never share one. Any
/// thread that stores a key earlier than ``armed`` lowers it by compare-exchange and arms the
/// driver; the driver's wake-up resets it, takes what is due from every store, merges it in
/// deadline order, and arms for the earliest key left.
///
/// Data flows one way. A timer asks the engine to hold its next deadline (``insert(_:_:)``); the
/// driver wakes, the engine takes every due timer out of the store and hands each to its delivery
/// target (``deliver(_:)``); there the timer's state machine (``ScheduledTimer/nextStep(now:_:)``)
/// decides what the fire means — run, coalesce, skip, burst, or put the timer back.
///
/// Lock discipline: `state` guards the engine's store and, by convention, every field of every
/// timer of this engine marked "guarded by the engine lock"; each shard's lock guards its store.
/// No two of them are held at once, except the arming lock, taken last. Handlers run, and captured
/// values are released, only after the locks are let go.
final class TimerEngine: @unchecked Sendable {
    struct State {
        var store: TimerStore
        var nextTimerID: UInt64 = 0
        var isShutDown = false
        var wakeUps = 0
        /// The current instant of a virtual clock.
        var virtualNow: Int64 = 0
        /// Whether a virtual clock is being advanced (advancing is not reentrant).
        var isAdvancing = false
        /// Engine-thread timers that used up their run budget and wait for their next turn.
        var ready: [ScheduledTimer] = []
        /// A decaying maximum of how late the driver woke after the instant it was armed for, in
        /// nanoseconds: what the engine keeps back from the end of a tolerance window (C3). Starts
        /// at 100 µs, a thread's wake-up on an idle machine, so that the first fires aim right too.
        var wakeUpLatency: Int64 = 100_000
        /// Tasks waiting in `ScheduledCallback.cancelAndWait()` for a run under way, by entry.
        var callbackWaiters: [Int32: [CheckedContinuation<Void, Never>]] = [:]

        init(layout: TimerStore.Layout, now: Int64) {
            store = TimerStore(layout: layout, now: now)
        }
        /// Timers with an invalidation hook (those behind an `AsyncSequence`), held weakly, so that
        /// a shutdown reaches them even while they are suspended or out of the store.
        var watched: [ObjectIdentifier: WeakTimer] = [:]
        /// `watched.count` after the last sweep of released timers.
        var watchedAfterSweep = 0
    }

    final class WeakTimer {
        weak var timer: ScheduledTimer?
        init(_ timer: ScheduledTimer) { self.timer = timer }
    }

    /// How many handler runs one delivery may make before the timer yields its target to the
    /// others (a slow repeating timer, a burst, or `fire()` called in a loop cannot monopolize the
    /// engine thread or a queue).
    static let runBudget = 16

    let kind: TimerClock.Kind
    let isShared: Bool
    /// Work due at the current wake-up, and the entries of engine-thread callbacks that ran in it;
    /// touched only by ``serviceDueTimers()``, which the driver never runs concurrently with itself.
    private var dueBuffer: [TimerStore.DueWork] = []
    /// High-precision timers taken out of the store before their deadlines at the current wake-up,
    /// with those deadlines; touched only by ``serviceDueTimers()``.
    private var preciseBuffer: [(timer: ScheduledTimer, deadline: Int64)] = []
    /// How many high-precision fires the driver woke early for and waited for actively (tests).
    let preciseWaits = Atomic<Int>(0)
    private var finishedBuffer: [Int32] = []
    let state: Locked<State>
    /// The callbacks of a system clock, four shards per core (empty for a virtual clock, whose
    /// callbacks share the engine's store so that they fire in exact creation order).
    let shards: [CallbackShard]
    /// The shards' locked states, unretained, for the hot paths (no reference counting on a shared
    /// object, whose count would bounce between cores); `shards` keeps them alive.
    private let shardStates: UnsafeMutablePointer<Unmanaged<Locked<CallbackShard.State>>>
    /// The number of shards less one (a power of two less one); -1 without shards.
    private let shardMask: Int
    /// The deadline the driver is armed for; `Int64.max` when disarmed. Lowered by compare-exchange
    /// from any thread that stores an earlier key (under whichever lock guards that store); reset
    /// by the driver's thread when it wakes. ``armDriver()`` arms the driver for its current value.
    let armed = Atomic<Int64>(.max)
    /// Serializes the calls into the driver, so that the last one arms for the current minimum.
    private let armLock = Locked(())
    /// `state.wakeUpLatency`, readable without the engine's lock (a shard's insert).
    private let wakeUpLatencyMirror = Atomic<Int64>(100_000)
    /// `state.isShutDown`, readable without the lock (from a timer's `deinit`).
    let hasShutDown = Atomic<Bool>(false)
    /// Where the tasks TimerKit starts for this clock run: a virtual clock's executor, so that its
    /// async `advance` waits for them; `nil` (the global executor) for the system clocks.
    let taskExecutor: (any TaskExecutor)?
    /// The tasks sleeping on a virtual clock, for its report of leaked sleepers.
    let sleepers = Locked<[ObjectIdentifier: Sleeper]>([:])
    private let driver: (any EngineDriver)?

    static let sharedContinuous = TimerEngine(kind: .continuous, isShared: true)
    static let sharedSuspending = TimerEngine(kind: .suspending, isShared: true)
    static let sharedWall = TimerEngine(kind: .wall, isShared: true)

    /// Creates a system-clock engine with the platform's driver, or a virtual one with none.
    convenience init(kind: TimerClock.Kind, isShared: Bool, layout: TimerStore.Layout = .wheel) {
        let driver = kind == .virtual ? nil : EngineDriverKind.serving(kind).make(for: kind)
        self.init(kind: kind, isShared: isShared, driver: driver, layout: layout)
    }

    init(
        kind: TimerClock.Kind, isShared: Bool, driver: (any EngineDriver)?, virtualStart: Int64 = 0, layout: TimerStore.Layout = .wheel,
        taskExecutor: (any TaskExecutor)? = nil
    ) {
        self.kind = kind
        self.taskExecutor = taskExecutor
        self.isShared = isShared
        self.driver = driver
        self.isVirtual = driver == nil
        let start = driver == nil ? virtualStart : SystemClock.now(kind)
        // Four shards per core, rounded up to a power of two, between 4 and 16: more threads than
        // cores is the common case (a server's thread pools), and a thread that shares its shard
        // with another can be preempted while it holds the lock (measured: 8 threads on 2 cores
        // with 2 shards did 30 % fewer pairs than 2 threads).
        let wanted = min(max(4 * ProcessInfo.processInfo.activeProcessorCount, 4), CallbackShard.maximumCount)
        let shardCount = driver == nil ? 0 : 1 << (Int.bitWidth - (wanted - 1).leadingZeroBitCount)
        shards = (0..<shardCount).map { _ in CallbackShard(layout: layout, now: start) }
        shardStates = .allocate(capacity: max(shardCount, 1))
        for (number, shard) in shards.enumerated() { (shardStates + number).initialize(to: .passUnretained(shard.state)) }
        shardMask = shardCount - 1
        var initial = State(layout: layout, now: start)
        initial.virtualNow = virtualStart
        self.state = Locked(initial)
        driver?.start(serving: self)
    }

    deinit {
        shardStates.deallocate()
    }

    /// Whether this is a virtual clock's engine (it has no driver). Stored: asking an optional
    /// existential whether it is `nil` goes through its value witnesses on every call.
    let isVirtual: Bool

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
        isVirtual ? state.withLock { $0.virtualNow } : SystemClock.now(kind)
    }

    @inline(__always)
    func now(_ state: State) -> Int64 {
        isVirtual ? state.virtualNow : SystemClock.now(kind)
    }

    var pendingCount: Int {
        state.withLock { $0.store.count } + shards.reduce(0) { count, shard in count + shard.state.withLock { $0.store.count } }
    }

    var wakeUpCount: Int { state.withLock { $0.wakeUps } }

    // MARK: Holding deadlines

    /// Puts a timer in the store under its next deadline. Called under the lock, for a timer that is
    /// active, not suspended, not running and not stored.
    func insert(_ timer: ScheduledTimer, _ state: inout State) {
        let (deadline, slack) = storedDeadline(timer, state)
        let index = state.store.insert(.timer(timer), deadline: deadline, slack: slack, sequence: timer.id)
        timer.storeSlot = index
        armIfEarlier(state.store.key(at: index))
    }

    /// The deadline and slack a timer is stored under: its next deadline and aimed tolerance; for a
    /// high-precision timer on a system clock, its next deadline less the spin lead, so that the
    /// driver wakes in time to wait for the deadline actively (``deliverPrecisely(_:)``).
    @inline(__always)
    private func storedDeadline(_ timer: ScheduledTimer, _ state: State) -> (deadline: Int64, slack: Int64) {
        let deadline = timer.machine.nextDeadline
        guard timer.isPrecise, !isVirtual, deadline != .max else { return (deadline, aimedSlack(timer.toleranceNanoseconds, state)) }
        return (deadline.addingSaturating(-spinLead(state)), 0)
    }

    /// How long before a high-precision deadline the driver wakes: one and a half times the
    /// decaying maximum of its measured wake-up latency plus 30 µs — at least 100 µs, at most 5 ms
    /// (after a machine's sleep, say, the estimate is briefly large; the cap bounds the CPU time a
    /// spin can take). Chosen by measurement against a smaller lead: BENCHMARKS.md, "Precision
    /// beyond the floor".
    @inline(__always)
    private func spinLead(_ state: State) -> Int64 {
        min(max(state.wakeUpLatency + state.wakeUpLatency >> 1 + 30_000, 100_000), 5_000_000)
    }

    /// How far into a tolerance window the engine aims (C3): the window less what it keeps back for
    /// its own wake-up latency — twice the decaying maximum it measured, and at least 50 µs — so
    /// that a fire lands inside the window, not just after its end. A virtual clock fires at the
    /// deadline itself. Windows still overlap and share wake-ups: the store takes every entry whose
    /// deadline has come at a wake-up.
    @inline(__always)
    private func aimedSlack(_ tolerance: Int64, _ state: State) -> Int64 {
        aimedSlack(tolerance, latency: state.wakeUpLatency)
    }

    @inline(__always)
    private func aimedSlack(_ tolerance: Int64, latency: Int64) -> Int64 {
        guard tolerance > 0, !isVirtual else { return 0 }
        return max(0, tolerance - (2 * latency + 50_000))
    }

    /// Learns how late the driver woke after the instant it was armed for (C3).
    @inline(__always)
    private func recordWakeUp(now: Int64, armedFor armed: Int64, _ state: inout State) {
        // An engine armed for 1 was asked to wake at once (a yield, a shutdown), not for a deadline.
        guard armed > 1, armed != .max, now >= armed else { return }
        // Capped, so that waking from a machine's sleep does not make the engine distrust its
        // windows for long; the estimate decays by 1/16 per wake-up.
        let sample = min(now - armed, 50_000_000)
        state.wakeUpLatency = max(sample, state.wakeUpLatency - state.wakeUpLatency >> 4)
        wakeUpLatencyMirror.store(state.wakeUpLatency, ordering: .relaxed)
    }

    /// Arms the driver for `key` if it comes before the instant it is armed for. Safe from any
    /// thread; the caller has stored the entry first, so a wake-up that reset ``armed`` meanwhile
    /// either sees the entry or is followed by this arming.
    @inline(__always)
    private func armIfEarlier(_ key: Int64) {
        guard !isVirtual else { return }  // not `driver != nil`: that copies the existential, a retain and a release
        var current = armed.load(ordering: .acquiring)
        while key < current {
            let (exchanged, original) = armed.compareExchange(expected: current, desired: key, ordering: .acquiringAndReleasing)
            if exchanged { return armDriver() }
            current = original
        }
    }

    /// Arms the driver for the current value of ``armed``: the last of concurrent callers arms for
    /// the lowest value any of them stored.
    private func armDriver() {
        guard let driver else { return }
        armLock.withLock { _ in
            let deadline = armed.load(ordering: .acquiring)
            if deadline != .max { driver.arm(at: deadline) }
        }
    }

    /// Wakes the driver at once (a yield, a shutdown).
    private func armNow() {
        armed.store(1, ordering: .releasing)
        armDriver()
    }

    /// Puts a timer at its (new) next deadline: moves its entry in place if it has one, else
    /// inserts one. Called under the lock.
    func place(_ timer: ScheduledTimer, _ state: inout State) {
        guard timer.storeSlot >= 0 else { return insert(timer, &state) }
        let (deadline, slack) = storedDeadline(timer, state)
        state.store.move(timer.storeSlot, deadline: deadline, slack: slack)
        armIfEarlier(state.store.key(at: timer.storeSlot))
    }

    /// Takes a timer out of the store if it is there. Called under the lock. The driver stays armed:
    /// a wake-up for a cancelled timer finds nothing due and re-arms, which is cheaper than a system
    /// call on every cancel.
    func removeIfStored(_ timer: ScheduledTimer, _ state: inout State) {
        if timer.storeSlot >= 0 {
            _ = state.store.remove(timer.storeSlot)
            timer.storeSlot = -1
        }
    }

    /// Schedules a callback (``ScheduledCallback``): one entry in the store and nothing else.
    func schedule(_ work: consuming TimerWork, deadline: Int64, slack: Int64) throws(TimerError) -> (index: Int32, sequence: UInt32) {
        var pending = Optional(work)  // moved into the store below, without a retain
        guard !shards.isEmpty else {
            return try state.withLock { (state) throws(TimerError) in
                guard !state.isShutDown else { throw .clockShutDown }
                let sequence = UInt32(truncatingIfNeeded: state.nextTimerID)
                state.nextTimerID &+= 1
                let index = state.store.insert(pending.take()!, deadline: deadline, slack: aimedSlack(slack, state), sequence: sequence)
                armIfEarlier(state.store.key(at: index))
                return (index, sequence)
            }
        }
        let number = Int(ctk_thread_slot()) & shardMask
        let aimed = aimedSlack(slack, latency: wakeUpLatencyMirror.load(ordering: .relaxed))
        let stored = shardStates[number]._withUnsafeGuaranteedRef { shardState in
            shardState.withLock { shard -> (raw: Int32, sequence: UInt32, key: Int64)? in
                guard !shard.isShutDown else { return nil }
                let sequence = shard.nextSequence
                shard.nextSequence &+= 1
                let raw = shard.store.insert(pending.take()!, deadline: deadline, slack: aimed, sequence: sequence)
                return (raw, sequence, shard.store.key(at: raw))
            }
        }
        guard let (raw, sequence, key) = stored else { throw .clockShutDown }
        armIfEarlier(key)
        return (CallbackShard.encode(raw, shard: number + 1), sequence)
    }

    /// The shard that holds a callback's index, and its index there; `nil` for the engine's store.
    @inline(__always)
    private func shard(of index: Int32) -> (shard: Unmanaged<Locked<CallbackShard.State>>, raw: Int32)? {
        guard shardMask >= 0, index >= 0 else { return nil }
        let (number, raw) = CallbackShard.decode(index)
        guard number > 0, number <= shardMask + 1 else { return nil }
        return (shardStates[number - 1], raw)
    }

    /// Cancels a callback whose run has not begun — waiting for its deadline, or due and on its way
    /// to its target (C8); `false` if its run has begun, it was cancelled, or its clock shut down.
    /// Its closure is released before this returns, outside the lock.
    func cancel(_ index: Int32, sequence: UInt32) -> Bool {
        let work: TimerWork?
        if let (shard, raw) = shard(of: index) {
            work = shard._withUnsafeGuaranteedRef { $0.withLock { $0.store.cancelCallback(raw, sequence: sequence) } }
        } else {
            work = state.withLock { $0.store.cancelCallback(index, sequence: sequence) }
        }
        return work != nil
    }

    /// Whether a callback's run has not begun and still can.
    func isPending(_ index: Int32, sequence: UInt32) -> Bool {
        if let (shard, raw) = shard(of: index) {
            return shard._withUnsafeGuaranteedRef { $0.withLock { $0.store.callbackState(raw, sequence: sequence) == .pending } }
        }
        return state.withLock { $0.store.callbackState(index, sequence: sequence) == .pending }
    }

    /// Returns once the callback's run, if one is under way, has returned.
    func waitForRun(ofCallback index: Int32, sequence: UInt32) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits: Bool
            if let (shard, raw) = shard(of: index) {
                waits = shard.takeUnretainedValue().withLock { shard -> Bool in
                    guard shard.store.callbackState(raw, sequence: sequence) == .running else { return false }
                    shard.callbackWaiters[raw, default: []].append(continuation)
                    return true
                }
            } else {
                waits = state.withLock { state -> Bool in
                    guard state.store.callbackState(index, sequence: sequence) == .running else { return false }
                    state.callbackWaiters[index, default: []].append(continuation)
                    return true
                }
            }
            if !waits { continuation.resume() }
        }
    }

    /// Frees the entry of a callback whose delivery is over, and resumes whoever waits for it.
    private func release(_ index: Int32) {
        let waiters: [CheckedContinuation<Void, Never>]?
        if let (shard, raw) = shard(of: index) {
            waiters = shard._withUnsafeGuaranteedRef {
                $0.withLock { shard in
                    shard.store.releaseDelivered(raw)
                    return shard.callbackWaiters.isEmpty ? nil : shard.callbackWaiters.removeValue(forKey: raw)
                }
            }
        } else {
            waiters = state.withLock { state in
                state.store.releaseDelivered(index)
                return state.callbackWaiters.isEmpty ? nil : state.callbackWaiters.removeValue(forKey: index)
            }
        }
        for waiter in waiters ?? [] { waiter.resume() }
    }

    /// Frees the entries of callbacks whose delivery is over, and resumes whoever waits for them.
    private func release(_ indices: [Int32]) {
        guard !indices.isEmpty else { return }
        guard !shards.isEmpty else {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                for index in indices { state.store.releaseDelivered(index) }
                guard !state.callbackWaiters.isEmpty else { return [] }
                return indices.flatMap { state.callbackWaiters.removeValue(forKey: $0) ?? [] }
            }
            for waiter in waiters { waiter.resume() }
            return
        }
        // One lock per shard that holds any of them.
        for (number, shard) in shards.enumerated() {
            let raws = indices.compactMap { index -> Int32? in
                let (owner, raw) = CallbackShard.decode(index)
                return owner == number + 1 ? raw : nil
            }
            guard !raws.isEmpty else { continue }
            let waiters = shard.state.withLock { shard -> [CheckedContinuation<Void, Never>] in
                for raw in raws { shard.store.releaseDelivered(raw) }
                guard !shard.callbackWaiters.isEmpty else { return [] }
                return raws.flatMap { shard.callbackWaiters.removeValue(forKey: $0) ?? [] }
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Runs a due callback if it can still be claimed, then frees its entry. Returns the number of
    /// runs (0 or 1).
    @discardableResult
    private func runAndRelease(_ ticket: CallbackTicket) -> Int {
        let ran = Self.run(ticket)
        release(ticket.index)
        return ran
    }

    /// Claims a due callback and runs it; its closure is released when the run returns.
    @inline(__always) @discardableResult
    private static func run(_ ticket: CallbackTicket) -> Int {
        guard let work = ticket.claim() else { return 0 }
        work.runCallback()
        return 1
    }

    /// Registers a new timer: gives it its creation number and, unless it starts suspended, stores
    /// its first deadline.
    func register(_ timer: ScheduledTimer, suspended: Bool) throws(TimerError) {
        try state.withLock { (state) throws(TimerError) in
            guard !state.isShutDown else { throw .clockShutDown }
            timer.id = UInt32(truncatingIfNeeded: state.nextTimerID)
            state.nextTimerID &+= 1
            timer.machine.isSuspended = suspended
            if timer.onInvalidate != nil {
                state.watched[ObjectIdentifier(timer)] = WeakTimer(timer)
                if state.watched.count > 2 * state.watchedAfterSweep + 64 {
                    state.watched = state.watched.filter { $0.value.timer != nil }
                    state.watchedAfterSweep = state.watched.count
                }
            }
            if !suspended { insert(timer, &state) }
        }
    }

    // MARK: Waking up

    /// Fires every due timer. Called by the driver when it wakes; returns `false` once the engine is
    /// shut down, telling the driver to stop.
    ///
    /// The engine wakes at the earliest *latest-acceptable* instant (deadline + tolerance) and then
    /// takes every timer whose deadline has come, so timers whose tolerance windows overlap share the
    /// wake-up (C3), and none fires before its deadline (C2).
    func serviceDueTimers() -> Bool {
        // The driver calls this from one thread (or one serial queue) at a time, so the buffer of
        // due timers is reused from wake-up to wake-up: no allocation on the common path.
        var due = dueBuffer
        dueBuffer = []
        var precise = preciseBuffer
        preciseBuffer = []
        defer {
            due.removeAll(keepingCapacity: true)
            dueBuffer = due
            preciseBuffer = precise
        }
        // Work that comes due while a pass delivers is served by another pass right away, without
        // the two system calls of arming the driver and waking from it (under a burst of deadlines
        // they were most of the engine thread's time). The passes are bounded, so that the driver
        // still gets its turn.
        for pass in 0..<Self.passesPerWakeUp {
            let now = SystemClock.now(kind)
            // From here on, a thread that stores an earlier key arms the driver itself; what is
            // stored before a store is looked at below is seen there.
            let armedFor = armed.exchange(.max, ordering: .acquiringAndReleasing)
            let (keepRunning, mainNext) = state.withLock { state -> (Bool, Int64) in
                guard !state.isShutDown else { return (false, .max) }
                if pass == 0 { state.wakeUps += 1 }
                for timer in state.ready {
                    due.append(.timer(timer))
                    if !shards.isEmpty { dueDeadlines.append(.min) }  // their turn has come: first
                }
                state.ready.removeAll(keepingCapacity: true)
                while let (work, deadline) = state.store.takeFirst(dueBy: now) {
                    if case .timer(let timer) = work {
                        timer.storeSlot = -1
                        timer.machine.isRunning = true
                        if timer.isPrecise && timer.machine.nextDeadline > now {
                            precise.append((timer, timer.machine.nextDeadline))
                            continue
                        }
                    }
                    due.append(work)
                    if !shards.isEmpty { dueDeadlines.append(deadline) }
                }
                return (true, state.store.wakeUpTime(now: now) ?? .max)
            }
            guard keepRunning else { return false }
            var next = mainNext
            if !shards.isEmpty { next = min(next, takeDueCallbacks(by: now, into: &due)) }
            if pass == 0 {
                // The wake-up's latency as the handlers will see it: up to now, with the stores
                // taken out — what the engine keeps back from the end of a window (C3).
                let ready = SystemClock.now(kind)
                state.withLock { recordWakeUp(now: ready, armedFor: armedFor, &$0) }
            }
            // Due already, or due sooner than the driver could sleep and wake again: the next pass
            // serves it, after waiting for it here. Otherwise arm for the earliest key, unless a
            // thread that stored an earlier one meanwhile has armed for that.
            let again = (!due.isEmpty || !precise.isEmpty) && pass + 1 < Self.passesPerWakeUp
                && next <= SystemClock.now(kind) + nearWindow
            if !again { armIfEarlier(next) }
            deliver(due)
            due.removeAll(keepingCapacity: true)
            dueDeadlines.removeAll(keepingCapacity: true)
            if !precise.isEmpty { deliverPrecisely(&precise) }
            if !again { return true }
            while SystemClock.now(kind) < next { ctk_cpu_relax() }
        }
        return true
    }

    /// How soon a next deadline must come for a wake-up to wait for it actively rather than re-arm
    /// the driver and sleep: half the driver's measured wake-up latency, at most 50 µs. A sleep that
    /// short would wake late anyway, and its two system calls cost more than the wait; under a
    /// dense stream of deadlines (a million timers due over seconds, one every few microseconds)
    /// re-arming the timer file was a quarter of the engine thread's time.
    private var nearWindow: Int64 {
        min(wakeUpLatencyMirror.load(ordering: .relaxed) / 2, 50_000)
    }

    /// Waits actively for each high-precision timer's deadline, in deadline (then creation) order,
    /// and delivers it the moment its deadline has come (never before: C2). Runs on the driver's
    /// thread after the wake-up's other due work, whose deadlines came before these.
    private func deliverPrecisely(_ timers: inout [(timer: ScheduledTimer, deadline: Int64)]) {
        if timers.count > 1 {
            timers.sort { $0.deadline < $1.deadline || ($0.deadline == $1.deadline && Int32(bitPattern: $0.timer.id &- $1.timer.id) < 0) }
        }
        for (timer, deadline) in timers {
            while SystemClock.now(kind) < deadline { ctk_cpu_relax() }
            deliver(timer)
        }
        preciseWaits.add(timers.count, ordering: .relaxed)
        timers.removeAll(keepingCapacity: true)
    }

    /// Deadlines of `dueBuffer`'s entries, for merging the shards' due callbacks in deadline order.
    private var dueDeadlines: [Int64] = []
    private var shardDue: [(work: TimerStore.DueWork, deadline: Int64)] = []

    /// Takes every callback due by `now` out of the shards into `due`, merged with what is there in
    /// deadline order (each store's own order kept); returns the earliest wake-up the shards need.
    private func takeDueCallbacks(by now: Int64, into due: inout [TimerStore.DueWork]) -> Int64 {
        var next = Int64.max
        var sources: [Range<Int>] = []
        var collected = shardDue
        shardDue = []
        for (number, shard) in shards.enumerated() {
            let start = collected.count
            let shardNext = shard.state.withLock { shard -> Int64 in
                guard !shard.isShutDown else { return .max }
                while let (work, deadline) = shard.store.takeFirst(dueBy: now) {
                    guard case .callback(let ticket) = work else { preconditionFailure("TimerEngine: a timer in a callback shard") }
                    let encoded = CallbackTicket(index: CallbackShard.encode(ticket.index, shard: number + 1), entry: ticket.entry, queue: ticket.queue)
                    collected.append((.callback(encoded), deadline))
                }
                return shard.store.wakeUpTime(now: now) ?? .max
            }
            next = min(next, shardNext)
            if collected.count > start { sources.append(start..<collected.count) }
        }
        defer {
            collected.removeAll(keepingCapacity: true)
            shardDue = collected
        }
        guard !sources.isEmpty else { return next }
        if due.isEmpty && sources.count == 1 {
            for item in collected { due.append(item.work) }
            return next
        }
        // A k-way merge of the engine's due work and each shard's, by deadline.
        var merged: [TimerStore.DueWork] = []
        merged.reserveCapacity(due.count + collected.count)
        var heads = sources.map(\.lowerBound)
        var mainHead = 0
        let mainCount = due.count
        while true {
            var best = -1
            var bestDeadline = Int64.max
            if mainHead < mainCount {
                best = sources.count
                bestDeadline = dueDeadlines[mainHead]
            }
            for (source, range) in sources.enumerated() where heads[source] < range.upperBound {
                let deadline = collected[heads[source]].deadline
                if best < 0 || deadline < bestDeadline {
                    best = source
                    bestDeadline = deadline
                }
            }
            if best < 0 { break }
            if best == sources.count {
                merged.append(due[mainHead])
                mainHead += 1
            } else {
                merged.append(collected[heads[best]].work)
                heads[best] += 1
            }
        }
        due = merged
        return next
    }

    /// How many passes over the store one wake-up may make (see ``serviceDueTimers()``).
    static let passesPerWakeUp = 64

    /// Hands due work to its delivery targets: engine-thread work runs here, in order; work for a
    /// queue goes there in one hop per queue.
    private func deliver(_ due: [TimerStore.DueWork]) {
        guard !due.isEmpty else { return }
        if due.count == 1 {
            deliver(due[0])
            return
        }
        var byQueue: [ObjectIdentifier: (queue: DispatchQueue, works: [TimerStore.DueWork])] = [:]
        var finished = finishedBuffer
        finishedBuffer = []
        for work in due {
            switch work {
            case .callback(let ticket):
                if let queue = ticket.queue {
                    byQueue[ObjectIdentifier(queue), default: (queue, [])].works.append(work)
                } else {
                    Self.run(ticket)
                    finished.append(ticket.index)
                }
            case .timer(let timer):
                switch timer.delivery.target {
                case .engineThread:
                    drain(timer)
                case .queue(let queue):
                    byQueue[ObjectIdentifier(queue), default: (queue, [])].works.append(work)
                }
            }
        }
        release(finished)
        finished.removeAll(keepingCapacity: true)
        finishedBuffer = finished
        for (queue, works) in byQueue.values {
            queue.async {
                var finished: [Int32] = []
                for work in works {
                    switch work {
                    case .timer(let timer):
                        self.drain(timer)
                    case .callback(let ticket):
                        Self.run(ticket)
                        finished.append(ticket.index)
                    }
                }
                self.release(finished)
            }
        }
    }

    /// Hands one piece of due work to its delivery target; on a virtual clock it runs before this
    /// returns. Returns the number of runs made before it returned.
    @discardableResult
    private func deliver(_ work: TimerStore.DueWork) -> Int {
        switch work {
        case .timer(let timer):
            return deliver(timer)
        case .callback(let ticket):
            guard let queue = ticket.queue else { return runAndRelease(ticket) }
            guard isVirtual else {
                queue.async { self.runAndRelease(ticket) }
                return 0
            }
            return runNow(on: queue) { runAndRelease(ticket) }
        }
    }

    /// Runs `body` on `queue` before returning (a virtual clock's delivery): directly when that is
    /// the main queue and the caller is on it, else with `sync` (which, onto the queue the caller is
    /// on, would deadlock). The main queue is recognized as ``TimerDelivery`` recognizes it: on Linux
    /// each read of `DispatchQueue.main` is a new object, and the main queue's blocks may run on
    /// threads other than the main thread.
    private func runNow<Result>(on queue: DispatchQueue, _ body: () -> Result) -> Result {
        if TimerDelivery.isMain(queue) && TimerDelivery.isOnMainQueue { return body() }
        return queue.sync(execute: body)
    }

    /// Hands one timer, already marked running, to its delivery target.
    ///
    /// On a virtual clock the run happens before this returns, on the calling thread (or
    /// synchronously on the timer's queue), so that advancing the clock is deterministic.
    /// Returns the number of handler runs made before it returned.
    @discardableResult
    func deliver(_ timer: ScheduledTimer) -> Int {
        switch timer.delivery.target {
        case .engineThread:
            return drain(timer)
        case .queue(let queue):
            guard isVirtual else {
                queue.async { self.drain(timer) }
                return 0
            }
            return runNow(on: queue) { drain(timer) }
        }
    }

    /// Runs a timer's handler as many times as its state machine says, then puts the timer back in
    /// the store (or lets it go). Runs of one timer never overlap (C14): only the holder of the
    /// timer's `isRunning` flag calls this.
    /// Returns the number of handler runs it made.
    @discardableResult
    func drain(_ timer: ScheduledTimer) -> Int {
        var runs = 0
        while true {
            let step = state.withLock { state in
                let now = now(state)
                if runs >= Self.runBudget && !isVirtual && timer.hasWorkNow(now) {
                    return yieldTurn(timer, &state)
                }
                let step = timer.nextStep(now: now, &state)
                switch step {
                case .run, .runFinal: timer.runDecided()
                case .stop, .yield, .stopInvalidated: break
                }
                return step
            }
            switch step {
            case .run(let handler, let fire):
                runs += runGated(timer, handler, fire)
            case .runFinal(let handler, let fire, let onInvalidate):
                runs += runGated(timer, handler, fire)
                onInvalidate?()
                return runs
            case .stop:
                return runs
            case .yield:
                if case .queue(let queue) = timer.delivery.target {
                    queue.async { self.drain(timer) }
                }
                return runs
            case .stopInvalidated(let onInvalidate, let released):
                _ = released
                onInvalidate?()
                return runs
            }
        }
    }

    /// Runs a decided run unless `invalidate()` stopped it before it began (C8); returns the number
    /// of handler runs (0 or 1).
    @inline(__always)
    private func runGated(_ timer: ScheduledTimer, _ handler: ScheduledTimer.Handler, _ fire: TimerFire) -> Int {
        guard timer.beginRun() else {
            state.withLock { _ in timer.abandonRun() }
            return 0
        }
        handler(timer, fire)
        timer.endRun()
        return 1
    }

    /// Gives up a running timer's turn: it keeps its `isRunning` flag and continues later — on the
    /// engine thread at the next wake-up (armed for now), on a queue in a new block.
    private func yieldTurn(_ timer: ScheduledTimer, _ state: inout State) -> ScheduledTimer.Step {
        if case .engineThread = timer.delivery.target {
            state.ready.append(timer)
            armNow()
        }
        return .yield
    }

    // MARK: Virtual time

    /// Moves a virtual clock to `target`, firing every timer due on the way in (deadline, creation)
    /// order, with the clock set to each deadline before its timer fires. Never moves backwards.
    /// Returns the number of handler runs.
    ///
    /// With `jumping`, the clock is set to `target` first, as if nothing could run on the way (a
    /// machine asleep, a blocked thread): each due timer then fires once at `target`, and its
    /// missed-deadline policy decides what the deadlines it missed mean (C5).
    @discardableResult
    func advance(to target: Int64, maxFires: Int = .max, jumping: Bool = false) -> Int {
        precondition(isVirtual, "TimerEngine.advance(to:): only a virtual clock can be advanced")
        state.withLock { state in
            precondition(!state.isAdvancing, "VirtualClock: advance was called from a timer handler while the clock was already advancing")
            state.isAdvancing = true
            if jumping { state.virtualNow = max(state.virtualNow, target) }
        }
        defer { state.withLock { $0.isAdvancing = false } }
        var fires = 0
        while fires < maxFires {
            let next = state.withLock { state -> TimerStore.DueWork? in
                guard let (work, deadline) = state.store.takeFirst(dueBy: target) else { return nil }
                state.virtualNow = max(state.virtualNow, deadline)
                state.wakeUps += 1
                if case .timer(let timer) = work {
                    timer.storeSlot = -1
                    timer.machine.isRunning = true
                }
                return work
            }
            guard let next else { break }
            fires += deliver(next)
        }
        state.withLock { state in
            if fires < maxFires { state.virtualNow = max(state.virtualNow, target) }
        }
        return fires
    }

    /// The earliest pending deadline of a virtual clock, or `nil` when no deadline will ever come
    /// (`Int64.max` is the end of time).
    var earliestDeadline: Int64? {
        state.withLock { state in
            state.store.firstDeadline().flatMap { $0 == .max ? nil : $0 }
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
