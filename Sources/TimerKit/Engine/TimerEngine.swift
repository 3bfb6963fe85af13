import Dispatch
import Foundation
import Synchronization

/// One clock's engine: every pending timer of the clock in one store, behind one lock, woken by one
/// driver that sleeps until the earliest deadline (C16).
///
/// Data flows one way. A timer asks the engine to hold its next deadline (``insert(_:_:)``); the
/// driver wakes, the engine takes every due timer out of the store and hands each to its delivery
/// target (``deliver(_:)``); there the timer's state machine (``ScheduledTimer/nextStep(now:_:)``)
/// decides what the fire means — run, coalesce, skip, burst, or put the timer back.
///
/// Lock discipline: `state` guards the store and, by convention, every field of every timer of
/// this engine marked "guarded by the engine lock". Handlers run, and captured values are released,
/// only after the lock is let go.
final class TimerEngine: @unchecked Sendable {
    struct State {
        var store: TimerStore
        /// The deadline the driver is armed for; `Int64.max` when disarmed.
        var armedDeadline = Int64.max
        var nextTimerID: UInt64 = 0
        var isShutDown = false
        var wakeUps = 0
        /// The current instant of a virtual clock.
        var virtualNow: Int64 = 0
        /// Whether a virtual clock is being advanced (advancing is not reentrant).
        var isAdvancing = false
        /// Engine-thread timers that used up their run budget and wait for their next turn.
        var ready: [ScheduledTimer] = []

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
    /// Work due at the current wake-up; touched only by ``serviceDueTimers()``, which the driver
    /// never runs concurrently with itself.
    private var dueBuffer: [TimerWork] = []
    let state: Locked<State>
    /// `state.isShutDown`, readable without the lock (from a timer's `deinit`).
    let hasShutDown = Atomic<Bool>(false)
    private let driver: (any EngineDriver)?

    static let sharedContinuous = TimerEngine(kind: .continuous, isShared: true)
    static let sharedSuspending = TimerEngine(kind: .suspending, isShared: true)
    static let sharedWall = TimerEngine(kind: .wall, isShared: true)

    /// Creates a system-clock engine with the platform's driver, or a virtual one with none.
    convenience init(kind: TimerClock.Kind, isShared: Bool, layout: TimerStore.Layout = .wheel) {
        let driver: (any EngineDriver)?
        if kind == .virtual {
            driver = nil
        } else {
            #if os(Linux) || os(Android)
            driver = TimerFDDriver(kind: kind)
            #else
            driver = DispatchDriver(kind: kind)
            #endif
        }
        self.init(kind: kind, isShared: isShared, driver: driver, layout: layout)
    }

    init(kind: TimerClock.Kind, isShared: Bool, driver: (any EngineDriver)?, virtualStart: Int64 = 0, layout: TimerStore.Layout = .wheel) {
        self.kind = kind
        self.isShared = isShared
        self.driver = driver
        self.isVirtual = driver == nil
        var initial = State(layout: layout, now: driver == nil ? virtualStart : SystemClock.now(kind))
        initial.virtualNow = virtualStart
        self.state = Locked(initial)
        driver?.start(serving: self)
    }

    /// Whether this is a virtual clock's engine (it has no driver). Stored: asking an optional
    /// existential whether it is `nil` goes through its value witnesses on every call.
    let isVirtual: Bool

    /// The current instant on this engine's clock, in nanoseconds.
    func now() -> Int64 {
        isVirtual ? state.withLock { $0.virtualNow } : SystemClock.now(kind)
    }

    @inline(__always)
    func now(_ state: State) -> Int64 {
        isVirtual ? state.virtualNow : SystemClock.now(kind)
    }

    var pendingCount: Int { state.withLock { $0.store.count } }

    var wakeUpCount: Int { state.withLock { $0.wakeUps } }

    // MARK: Holding deadlines

    /// Puts a timer in the store under its next deadline. Called under the lock, for a timer that is
    /// active, not suspended, not running and not stored.
    func insert(_ timer: ScheduledTimer, _ state: inout State) {
        // A virtual clock fires at the deadline itself; a real one may use the tolerance window to
        // serve several timers with one wake-up (C3).
        let index = state.store.insert(
            .timer(timer), deadline: timer.machine.nextDeadline, slack: isVirtual ? 0 : timer.toleranceNanoseconds,
            sequence: UInt32(truncatingIfNeeded: timer.id))
        timer.storeSlot = index
        armIfEarlier(state.store.key(at: index), &state)
    }

    /// Arms the driver for `key` if it comes before the instant it is armed for.
    @inline(__always)
    private func armIfEarlier(_ key: Int64, _ state: inout State) {
        if key < state.armedDeadline, let driver {
            state.armedDeadline = key
            driver.arm(at: key)
        }
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
        return try state.withLock { (state) throws(TimerError) in
            guard !state.isShutDown else { throw .clockShutDown }
            let sequence = UInt32(truncatingIfNeeded: state.nextTimerID)
            state.nextTimerID &+= 1
            let index = state.store.insert(pending.take()!, deadline: deadline, slack: isVirtual ? 0 : slack, sequence: sequence)
            armIfEarlier(state.store.key(at: index), &state)
            return (index, sequence)
        }
    }

    /// Cancels a pending callback; `false` if it already started, was cancelled, or its clock shut
    /// down. Its closure is released before this returns, outside the lock.
    func cancel(_ index: Int32, sequence: UInt32) -> Bool {
        let work = state.withLock { state -> TimerWork? in
            guard state.store.holdsCallback(index, sequence: sequence) else { return nil }
            return state.store.remove(index)
        }
        return work != nil
    }

    /// Whether a callback is still waiting for its deadline.
    func isPending(_ index: Int32, sequence: UInt32) -> Bool {
        state.withLock { $0.store.holdsCallback(index, sequence: sequence) }
    }

    /// Registers a new timer: gives it its creation number and, unless it starts suspended, stores
    /// its first deadline.
    func register(_ timer: ScheduledTimer, suspended: Bool) throws(TimerError) {
        try state.withLock { (state) throws(TimerError) in
            guard !state.isShutDown else { throw .clockShutDown }
            timer.id = state.nextTimerID
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
        defer {
            due.removeAll(keepingCapacity: true)
            dueBuffer = due
        }
        // Work that comes due while a pass delivers is served by another pass right away, without
        // the two system calls of arming the driver and waking from it (under a burst of deadlines
        // they were most of the engine thread's time). The passes are bounded, so that the driver
        // still gets its turn.
        for pass in 0..<Self.passesPerWakeUp {
            let now = SystemClock.now(kind)
            let (keepRunning, again) = state.withLock { state -> (Bool, Bool) in
                guard !state.isShutDown else { return (false, false) }
                if pass == 0 { state.wakeUps += 1 }
                for timer in state.ready { due.append(.timer(timer)) }
                state.ready.removeAll(keepingCapacity: true)
                while let (work, _) = state.store.removeFirst(dueBy: now) {
                    if case .timer(let timer) = work {
                        timer.storeSlot = -1
                        timer.machine.isRunning = true
                    }
                    due.append(work)
                }
                state.armedDeadline = state.store.wakeUpTime(now: now) ?? .max
                if !due.isEmpty && pass + 1 < Self.passesPerWakeUp && state.armedDeadline <= SystemClock.now(kind) {
                    // Due already: the next pass serves it. An insert meanwhile arms the driver as usual.
                    return (true, true)
                }
                if state.armedDeadline != .max { driver?.arm(at: state.armedDeadline) }
                return (true, false)
            }
            deliver(due)
            due.removeAll(keepingCapacity: true)
            if !keepRunning || !again { return keepRunning }
        }
        return true
    }

    /// How many passes over the store one wake-up may make (see ``serviceDueTimers()``).
    static let passesPerWakeUp = 64

    /// Hands due work to its delivery targets: engine-thread work runs here, in order; work for a
    /// queue goes there in one hop per queue.
    private func deliver(_ due: [TimerWork]) {
        guard !due.isEmpty else { return }
        if due.count == 1 {
            deliver(due[0])
            return
        }
        var byQueue: [ObjectIdentifier: (queue: DispatchQueue, works: [TimerWork])] = [:]
        for work in due {
            switch work {
            case .callback(let body):
                body()
            case .queued(let queued):
                byQueue[ObjectIdentifier(queued.queue), default: (queued.queue, [])].works.append(work)
            case .timer(let timer):
                switch timer.delivery.target {
                case .engineThread:
                    drain(timer)
                case .queue(let queue):
                    byQueue[ObjectIdentifier(queue), default: (queue, [])].works.append(work)
                }
            case .none:
                break
            }
        }
        for (queue, works) in byQueue.values {
            queue.async {
                for work in works {
                    switch work {
                    case .timer(let timer): self.drain(timer)
                    case .queued(let queued): queued.work()
                    case .callback, .none: break
                    }
                }
            }
        }
    }

    /// Hands one piece of due work to its delivery target; on a virtual clock it runs before this
    /// returns. Returns the number of runs made before it returned.
    @discardableResult
    private func deliver(_ work: TimerWork) -> Int {
        switch work {
        case .timer(let timer):
            return deliver(timer)
        case .callback(let body):
            body()
            return 1
        case .queued(let queued):
            guard isVirtual else {
                queued.queue.async(execute: queued.work)
                return 0
            }
            runNow(on: queued.queue) { queued.work() }
            return 1
        case .none:
            return 0
        }
    }

    /// Runs `body` on `queue` before returning (a virtual clock's delivery): directly when that is
    /// the main queue and this is the main thread, else with `sync`.
    private func runNow<Result>(on queue: DispatchQueue, _ body: () -> Result) -> Result {
        if queue === DispatchQueue.main && Thread.isMainThread { return body() }
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
                return timer.nextStep(now: now, &state)
            }
            switch step {
            case .run(let handler, let fire):
                runs += 1
                handler(timer, fire)
            case .runFinal(let handler, let fire, let onInvalidate):
                handler(timer, fire)
                onInvalidate?()
                return runs + 1
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

    /// Gives up a running timer's turn: it keeps its `isRunning` flag and continues later — on the
    /// engine thread at the next wake-up (armed for now), on a queue in a new block.
    private func yieldTurn(_ timer: ScheduledTimer, _ state: inout State) -> ScheduledTimer.Step {
        if case .engineThread = timer.delivery.target {
            state.ready.append(timer)
            state.armedDeadline = 1
            driver?.arm(at: 1)
        }
        return .yield
    }

    // MARK: Virtual time

    /// Moves a virtual clock to `target`, firing every timer due on the way in (deadline, creation)
    /// order, with the clock set to each deadline before its timer fires. Never moves backwards.
    /// Returns the number of handler runs.
    @discardableResult
    func advance(to target: Int64, maxFires: Int = .max) -> Int {
        precondition(isVirtual, "TimerEngine.advance(to:): only a virtual clock can be advanced")
        state.withLock { state in
            precondition(!state.isAdvancing, "VirtualClock: advance was called from a timer handler while the clock was already advancing")
            state.isAdvancing = true
        }
        defer { state.withLock { $0.isAdvancing = false } }
        var fires = 0
        while fires < maxFires {
            let next = state.withLock { state -> TimerWork? in
                guard let (work, deadline) = state.store.removeFirst(dueBy: target) else { return nil }
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
            state.armedDeadline = 1
            driver?.arm(at: 1)
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
        // Handlers and callbacks are released, and hooks called, outside the lock.
        _ = released
        for (_, onInvalidate) in leftovers { onInvalidate?() }
    }
}
