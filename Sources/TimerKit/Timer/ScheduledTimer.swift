import Dispatch
import Foundation
import Synchronization

/// A timer that cannot leak, needs no run loop, and keeps NSTimer's exact semantics where they are
/// right: fires on a fixed grid with no drift, a tolerance window, and coalesced missed deadlines.
///
/// Create one with a factory — ``repeating(every:first:tolerance:precision:clock:missedDeadlines:delivery:_:)-(_,_,_,_,_,_,_,(ScheduledTimer,TimerFire)->Void)`` or
/// ``once(at:tolerance:precision:clock:delivery:_:)-(_,_,_,_,_,(ScheduledTimer,TimerFire)->Void)`` with a closure, or the same with a
/// ``TimerHandler``: `.bound(to: self) { owner, timer, fire in … }` (recommended whenever the handler
/// calls back into an object), `.onMainActor { … }`, `.onMainActor(bound: self) { … }` — or iterate
/// ``fires(every:first:tolerance:clock:missedDeadlines:)`` with `for await`.
///
/// ## Lifetime (C12)
///
/// A scheduled timer runs until it is invalidated, its one-shot fire happens, or its owner is gone,
/// **whether or not anyone keeps the returned handle**: the clock's engine holds every pending
/// timer. Dropping the handle never stops a timer silently. The only exception is a suspended
/// timer: nobody can resume it once its last handle is gone, so it is released with the handle —
/// and debug builds print a warning saying so (invalidate it first to say that this is intended).
///
/// A timer never holds its owner (C11): a handler bound to an owner (``TimerHandler/bound(to:_:)``) keeps it weakly and pass it
/// to the handler, and once the owner is gone the timer invalidates itself at its next deadline
/// without calling the handler. Store such a timer in a property of its owner; the owner's `deinit`
/// runs as soon as the last outside reference goes, and no `invalidate()` in a "view will
/// disappear" hook is needed.
///
/// ## Threads (C13, C14)
///
/// Every method is safe from any thread at any time, including from inside the handler. Runs of
/// one timer's handler never overlap, even on a concurrent queue.
public final class ScheduledTimer: @unchecked Sendable {
    /// A handler, as stored: every factory form is reduced to this.
    typealias Handler = @Sendable (ScheduledTimer, TimerFire) -> Void

    enum Step {
        /// Run the handler once, then ask again.
        case run(Handler, TimerFire)
        /// Run the handler for the last time: the timer is now invalid.
        case runFinal(Handler, TimerFire, (@Sendable () -> Void)?)
        /// Nothing to run: the timer is back in the store, suspended, or idle.
        case stop
        /// More to run, but the delivery used its budget: continue in a later turn.
        case yield
        /// The timer was found invalid (its clock shut down); release and notify.
        case stopInvalidated((@Sendable () -> Void)?, Handler?)
    }

    // The stored fields are ordered so that the small ones pack together: a pending timer's object
    // stays small; what few timers use lives in `extras`, allocated on first use.

    let engine: TimerEngine
    let toleranceNanoseconds: Int64
    /// Where the handler runs (C15).
    public let delivery: TimerDelivery
    /// ``missedDeadlinePolicy``, in eight bytes: 0 coalesce, -1 skip, n ≥ 1 burst of at most n.
    private let policyCode: Int

    // Guarded by the engine lock.
    var handler: Handler?
    var machine: TimerStateMachine
    private var extras: Extras?
    /// Creation order on the engine, truncated to 32 bits like the store's; breaks ties between
    /// equal deadlines (compared with wrapping arithmetic).
    var id: UInt32 = 0
    /// The index of the timer's entry in its engine's store, or -1 when it is not stored.
    var storeSlot: Int32 = -1
    /// Set for timers whose suspended release is part of the design (an `AsyncSequence` never
    /// iterated), so that no lifetime warning is printed.
    var releasesSilentlyWhenSuspended = false
    /// Whether the timer is ``TimerPrecision/high``: the engine takes it out of the store shortly
    /// before its deadline and waits for the deadline actively.
    let isPrecise: Bool

    /// What few timers use. Guarded by the engine lock.
    private final class Extras {
        var onInvalidate: (@Sendable () -> Void)?
        var runWaiters: [CheckedContinuation<Void, Never>] = []
        var skippedDeadlines = 0
        var burst: (nextScheduled: Int64, fires: Int, lastCount: Int)?
    }

    /// Grid deadlines that passed without a run of their own under ``MissedDeadlinePolicy/skip``
    /// since the last fire; the next fire reports them (C5). Guarded by the engine lock.
    var skippedDeadlines: Int {
        get { extras?.skippedDeadlines ?? 0 }
        set {
            guard newValue != 0 || extras != nil else { return }
            extrasForWriting.skippedDeadlines = newValue
        }
    }

    /// The rest of a burst of missed deadlines being fired back to back (C5). Guarded by the engine
    /// lock.
    var burst: (nextScheduled: Int64, fires: Int, lastCount: Int)? {
        get { extras?.burst }
        set {
            guard newValue != nil || extras != nil else { return }
            extrasForWriting.burst = newValue
        }
    }

    private var extrasForWriting: Extras {
        if let extras { return extras }
        let made = Extras()
        extras = made
        return made
    }

    /// Called once the timer is invalid (the `AsyncSequence` behind it ends). Guarded by the engine
    /// lock.
    var onInvalidate: (@Sendable () -> Void)? {
        get { extras?.onInvalidate }
        set {
            guard newValue != nil || extras != nil else { return }
            extrasForWriting.onInvalidate = newValue
        }
    }

    /// Tasks waiting in ``invalidateAndWait()`` for the run under way to return. Guarded by the
    /// engine lock.
    var runWaiters: [CheckedContinuation<Void, Never>] {
        get { extras?.runWaiters ?? [] }
        set {
            guard !newValue.isEmpty || extras != nil else { return }
            extrasForWriting.runWaiters = newValue
        }
    }

    /// The policy for missed deadlines (C5).
    public var missedDeadlinePolicy: MissedDeadlinePolicy {
        switch policyCode {
        case 0: .coalesce
        case -1: .skip
        default: .burst(maxFires: policyCode)
        }
    }

    /// Where the run the engine decided on stands (C8): ``RunGate``. Changed under the engine lock,
    /// except for the two steps the running thread takes on its own — `decided → entered` right
    /// before the handler is called, `entered → idle` right after it returns — which are atomic.
    let runGate = Atomic<UInt8>(RunGate.idle)
    /// Whether ``runWaiters`` may be non-empty: read by the running thread without the lock.
    let hasRunWaiters = Atomic<Bool>(false)

    /// The states of ``runGate``.
    enum RunGate {
        /// No run decided or under way.
        static let idle: UInt8 = 0
        /// The engine decided on a run, under its lock; the handler has not been called.
        static let decided: UInt8 = 1
        /// The run has begun: the handler is being called or running.
        static let entered: UInt8 = 2
        /// `invalidate()` stopped the decided run before it began.
        static let cancelled: UInt8 = 3
    }

    init(
        engine: TimerEngine,
        firstDeadline: Int64,
        interval: Int64,
        tolerance: Int64,
        precision: TimerPrecision = .standard,
        policy: MissedDeadlinePolicy,
        delivery: TimerDelivery,
        handler: @escaping Handler
    ) {
        self.engine = engine
        self.toleranceNanoseconds = tolerance
        self.isPrecise = precision.isHigh
        self.policyCode =
            switch policy {
            case .coalesce: 0
            case .skip: -1
            case .burst(let maxFires): maxFires
            }
        self.delivery = delivery
        self.machine = TimerStateMachine(firstDeadline: firstDeadline, interval: interval)
        self.handler = handler
    }

    deinit {
        // C12: a scheduled timer is never stopped by dropping its handle — except a suspended one,
        // which nobody can resume any more. Say so in debug builds. No other reference exists here,
        // so reading the state without the lock is safe.
        #if DEBUG
        if machine.lifecycle == .active && machine.isSuspended && !releasesSilentlyWhenSuspended
            && !engine.hasShutDown.load(ordering: .acquiring)
        {
            ScheduledTimer.reportLifetimeWarning(
                "TimerKit: a suspended timer was released with its last handle, so it can never be resumed "
                    + "and will not fire again. Call invalidate() before letting it go to say that this is intended.",
                timer: ObjectIdentifier(self))
        }
        #endif
    }

    /// Where debug-build lifetime warnings go: stderr by default; tests capture them, with the
    /// identity of the timer they are about.
    static let lifetimeWarnings = Locked<(@Sendable (String, ObjectIdentifier) -> Void)?>(nil)

    static func reportLifetimeWarning(_ message: String, timer: ObjectIdentifier) {
        if let sink = lifetimeWarnings.withLock({ $0 }) {
            sink(message, timer)
        } else {
            FileHandle.standardError.write(Data((message + "\n").utf8))
        }
    }

    // MARK: Reading state

    /// The clock this timer runs on.
    public var clock: TimerClock { TimerClock(engine: engine) }

    /// The tolerance: how late after a deadline a fire may happen so that the engine can serve
    /// several timers with one wake-up (C3). Zero by default.
    public var tolerance: Duration { .nanoseconds(toleranceNanoseconds) }

    /// How closely fires follow deadlines: by sleeping, or by sleeping and then waiting actively
    /// (``TimerPrecision``).
    public var precision: TimerPrecision { isPrecise ? .high : .standard }

    /// Whether the timer can still fire. `false` after ``invalidate()``, after a one-shot timer's
    /// fire has started (also inside that fire's handler: C6), once an owner-bound timer found its
    /// owner gone, and once its clock was shut down.
    public var isValid: Bool {
        engine.state.withLock { state in machine.lifecycle == .active && !state.isShutDown }
    }

    /// Whether the timer is suspended (C9).
    public var isSuspended: Bool { engine.state.withLock { _ in machine.isSuspended } }

    /// The repeat interval, or `nil` for a one-shot timer.
    public var interval: Duration? {
        engine.state.withLock { _ in machine.isRepeating ? .nanoseconds(machine.interval) : nil }
    }

    /// The next deadline on the timer's grid, or `nil` once the timer is invalid.
    ///
    /// While the timer is suspended this is the deadline it will fire for (or count as missed) when
    /// resumed.
    public var nextDeadline: TimerInstant? {
        engine.state.withLock { state in
            guard machine.lifecycle == .active, !state.isShutDown else { return nil }
            return TimerInstant(kind: engine.kind, nanoseconds: machine.nextDeadline)
        }
    }

    /// How many times the handler has started running.
    public var fireCount: Int { engine.state.withLock { _ in machine.fireCount } }

    // MARK: Controlling

    /// Runs the handler now, on the timer's delivery target, without moving a repeating timer's
    /// next deadline (C7).
    ///
    /// The run's ``TimerFire/deadlineCount`` is 0. On a one-shot timer this is its one fire: the
    /// timer is invalid from then on. On an invalid timer it does nothing. A suspended timer fires
    /// too, and stays suspended. Runs never overlap, and requests made while one is already waiting
    /// merge into it, so calling `fire()` in a loop cannot queue work without bound.
    ///
    /// Who runs it, exactly:
    /// - If no run is decided or under way, the run is handed to the delivery now; with
    ///   ``TimerDelivery/engineThread`` delivery it runs on the calling thread before `fire()`
    ///   returns.
    /// - Otherwise the thread that holds the run does it, right after the run under way, and
    ///   `fire()` returns at once. "Decided" includes the moment between the engine taking a due
    ///   timer and calling its handler: a timer whose deadline has just come — for example one just
    ///   moved to a near deadline with ``reschedule(at:every:)`` — may be taken by the engine thread
    ///   an instant before `fire()`. On a one-shot the requested run then *replaces* the deadline's
    ///   run (it stands for it, with `deadlineCount` 0), so the handler still runs exactly once.
    ///
    /// - Returns: Whether a run was requested: `false` only when the timer was already invalid (a
    ///   one-shot whose run has begun, an invalidated timer, a shut-down clock).
    @discardableResult
    public func fire() -> Bool {
        let (requested, deliverNow) = engine.state.withLock { state -> (Bool, Bool) in
            guard machine.lifecycle == .active, !state.isShutDown else { return (false, false) }
            machine.hasPendingManualFire = true
            guard !machine.isRunning else { return (true, false) }
            engine.removeIfStored(self, &state)
            machine.isRunning = true
            return (true, true)
        }
        if deliverNow { engine.deliver(self) }
        return requested
    }

    /// Stops the timer for good (C8).
    ///
    /// Idempotent and safe from any thread, including from inside the timer's own handler, where it
    /// returns at once. Once it returns, no new run of the handler starts: a run that was due, or
    /// handed to the delivery queue, but has not begun never begins. A run already under way on
    /// another thread may finish; ``invalidateAndWait()`` waits for it. The handler, and everything
    /// it captured, is released before this returns, or — if a run is under way — when that run
    /// returns.
    ///
    /// A run *begins* at one atomic step the delivering thread takes immediately before it calls the
    /// handler; nothing between that step and the call can block, take a lock or wake a thread.
    public func invalidate() {
        let (released, onInvalidate) = engine.state.withLock { state in
            engine.removeIfStored(self, &state)
            if self.onInvalidate != nil { state.watched[ObjectIdentifier(self)] = nil }
            return invalidateLocked()
        }
        _ = released
        onInvalidate?()
    }

    /// Invalidates the timer (``invalidate()``), then waits until no run of its handler is under way
    /// (C8): when this returns, the handler is not running and will never run again, so what it uses
    /// can be torn down.
    ///
    /// Called from a task that the handler itself waits for, this never returns: the run it waits
    /// for cannot end.
    public func invalidateAndWait() async {
        invalidate()
        guard runGate.load(ordering: .sequentiallyConsistent) == RunGate.entered else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = engine.state.withLock { _ -> Bool in
                // Announce the waiter, then look: the running thread ends the run, then looks for
                // waiters, so one of the two sees the other.
                hasRunWaiters.store(true, ordering: .sequentiallyConsistent)
                guard runGate.load(ordering: .sequentiallyConsistent) == RunGate.entered else {
                    if runWaiters.isEmpty { hasRunWaiters.store(false, ordering: .sequentiallyConsistent) }
                    return false
                }
                runWaiters.append(continuation)
                return true
            }
            if !waits { continuation.resume() }
        }
    }

    /// Stops firing until ``resume()`` (C9). Idempotent and never counted: two suspends and one
    /// resume leave the timer running.
    ///
    /// The deadlines keep their grid while the timer is suspended. A fire already handed to the
    /// delivery queue but not yet started does not run; its deadline counts as missed on resume.
    ///
    /// - Returns: Whether this call suspended the timer: `false` if it was already suspended or
    ///   is invalid.
    @discardableResult
    public func suspend() -> Bool {
        engine.state.withLock { state in
            guard machine.lifecycle == .active, !machine.isSuspended else { return false }
            machine.isSuspended = true
            engine.removeIfStored(self, &state)
            return true
        }
    }

    /// Resumes a suspended timer (C9). Idempotent.
    ///
    /// Deadlines that passed while the timer was suspended are missed deadlines: the timer's
    /// ``missedDeadlinePolicy`` decides what happens now (C5). A one-shot timer whose deadline
    /// passed fires at once. That catch-up fire is delivered like any other; with
    /// ``TimerDelivery/engineThread`` delivery it runs on the calling thread before `resume()`
    /// returns.
    ///
    /// - Returns: Whether this call resumed the timer: `false` if it was not suspended or is
    ///   invalid.
    @discardableResult
    public func resume() -> Bool {
        let (resumed, deliverNow) = engine.state.withLock { state -> (Bool, Bool) in
            guard machine.lifecycle == .active, machine.isSuspended, !state.isShutDown else { return (false, false) }
            machine.isSuspended = false
            guard !machine.isRunning else { return (true, false) }
            if machine.nextDeadline <= engine.now(state) && machine.nextDeadline != .max {
                machine.missedWhileSuspended = true
                machine.isRunning = true
                return (true, true)
            }
            engine.insert(self, &state)
            return (true, false)
        }
        if deliverNow { engine.deliver(self) }
        return resumed
    }

    /// Moves the timer to a new grid (C10): its next deadline becomes `start` and, if `interval` is
    /// given, its repeat interval changes too (a one-shot timer becomes a repeating one).
    ///
    /// Later deadlines are `start + k · interval`. A suspended timer stays suspended. A start in the
    /// past fires at once.
    ///
    /// - Throws: ``TimerError/nonPositiveInterval(_:)`` and ``TimerError/durationOverflow`` for bad
    ///   input; ``TimerError/clockMismatch(expected:got:)`` for an instant of another clock;
    ///   ``TimerError/timerInvalidated`` when the timer was already invalid.
    public func reschedule(at start: TimerStart, every interval: Duration? = nil) throws(TimerError) {
        let intervalNanoseconds = try interval.map { (interval) throws(TimerError) in try Self.validatedInterval(interval) }
        try engine.state.withLock { (state) throws(TimerError) in
            guard machine.lifecycle == .active, !state.isShutDown else { throw .timerInvalidated }
            let newInterval = intervalNanoseconds ?? machine.interval
            // The clock is read only for a start relative to now.
            machine.nextDeadline = try Self.firstDeadline(start, interval: newInterval, now: { engine.now(state) }, kind: engine.kind)
            machine.interval = newInterval
            burst = nil
            machine.missedWhileSuspended = false
            skippedDeadlines = 0
            if !machine.isSuspended && !machine.isRunning {
                engine.place(self, &state)
            } else {
                engine.removeIfStored(self, &state)
            }
        }
    }

    // MARK: The state machine (called under the engine lock)

    /// Makes the timer invalid, and stops a run that was decided but has not begun (C8, also for a
    /// one-shot's final run); returns what must be released and notified after the lock is let go.
    func invalidateLocked() -> (Handler?, (@Sendable () -> Void)?) {
        // The stopped run is not counted: `fireCount` read after invalidate() returns is final.
        if runGate.compareExchange(expected: RunGate.decided, desired: RunGate.cancelled, ordering: .sequentiallyConsistent).exchanged {
            machine.fireCount -= 1
        }
        guard machine.lifecycle == .active else { return (nil, nil) }
        machine.lifecycle = .invalid
        machine.hasPendingManualFire = false
        burst = nil
        let released = handler
        handler = nil
        let hook = onInvalidate
        onInvalidate = nil
        return (released, hook)
    }

    // MARK: The run gate (C8)

    /// Marks the run just decided on. Under the engine lock.
    @inline(__always)
    func runDecided() {
        runGate.store(RunGate.decided, ordering: .sequentiallyConsistent)
    }

    /// Begins the decided run, unless `invalidate()` stopped it first. Called by the delivering
    /// thread, without the lock, immediately before it calls the handler.
    @inline(__always)
    func beginRun() -> Bool {
        runGate.compareExchange(expected: RunGate.decided, desired: RunGate.entered, ordering: .sequentiallyConsistent).exchanged
    }

    /// Ends a run that began; resumes the tasks waiting for it. Called by the delivering thread,
    /// without the lock, right after the handler returns.
    @inline(__always)
    func endRun() {
        runGate.store(RunGate.idle, ordering: .sequentiallyConsistent)
        guard hasRunWaiters.load(ordering: .sequentiallyConsistent) else { return }
        let waiters = engine.state.withLock { _ -> [CheckedContinuation<Void, Never>] in
            hasRunWaiters.store(false, ordering: .sequentiallyConsistent)
            defer { runWaiters = [] }
            return runWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Forgets a decided run that `invalidate()` stopped before it began (and uncounted). Under the
    /// engine lock.
    func abandonRun() {
        runGate.store(RunGate.idle, ordering: .sequentiallyConsistent)
    }

    /// Whether the running delivery would run the handler again right now.
    func hasWorkNow(_ now: Int64) -> Bool {
        guard machine.lifecycle == .active else { return false }
        let isDue = machine.nextDeadline <= now && machine.nextDeadline != .max
        return machine.hasPendingManualFire || (!machine.isSuspended && (burst != nil || isDue))
    }

    /// Decides what the running delivery does next. Called by the holder of `isRunning`.
    func nextStep(now: Int64, _ state: inout TimerEngine.State) -> Step {
        if state.isShutDown && machine.lifecycle == .active {
            let (released, hook) = invalidateLocked()
            machine.isRunning = false
            return .stopInvalidated(hook, released)
        }
        guard machine.lifecycle == .active, let handler else {
            machine.isRunning = false
            return .stop
        }
        let kind = engine.kind
        if machine.hasPendingManualFire {
            machine.hasPendingManualFire = false
            machine.fireCount = machine.fireCount.addingSaturating(1)
            let at = TimerInstant(kind: kind, nanoseconds: now)
            let fire = TimerFire(scheduledDeadline: at, firedAt: at, deadlineCount: 0, sequenceNumber: machine.fireCount)
            if !machine.isRepeating {
                let (_, hook) = invalidateLocked()
                machine.isRunning = false
                return .runFinal(handler, fire, hook)
            }
            return .run(handler, fire)
        }
        if machine.isSuspended {
            machine.isRunning = false
            return .stop
        }
        if let current = burst {
            machine.fireCount = machine.fireCount.addingSaturating(1)
            let last = current.fires == 1
            burst = last ? nil : (current.nextScheduled.addingSaturating(machine.interval), current.fires - 1, current.lastCount)
            let fire = TimerFire(
                scheduledDeadline: TimerInstant(kind: kind, nanoseconds: current.nextScheduled),
                firedAt: TimerInstant(kind: kind, nanoseconds: now),
                deadlineCount: last ? current.lastCount : 1,
                sequenceNumber: machine.fireCount)
            return .run(handler, fire)
        }
        let deadline = machine.nextDeadline
        // `Int64.max` is the end of time: a deadline there (a saturated grid) never comes (C17).
        guard deadline <= now && deadline != .max else {
            // Not due (yet, or again): back to the store.
            machine.isRunning = false
            engine.insert(self, &state)
            return .stop
        }
        if !machine.isRepeating {
            // C6: a one-shot timer is invalid from the moment its fire starts.
            machine.fireCount = machine.fireCount.addingSaturating(1)
            let fire = TimerFire(
                scheduledDeadline: TimerInstant(kind: kind, nanoseconds: deadline),
                firedAt: TimerInstant(kind: kind, nanoseconds: now),
                deadlineCount: 1,
                skippedDeadlineCount: 0,
                sequenceNumber: machine.fireCount)
            let (_, hook) = invalidateLocked()
            machine.isRunning = false
            return .runFinal(handler, fire, hook)
        }
        // Count the grid deadlines that have come: deadline, deadline + i, …, deadline + (n-1)·i ≤ now.
        // Unsigned arithmetic: now - deadline can exceed Int64.max when the first deadline was far
        // in the past, and must neither trap nor wrap (C17).
        let interval = machine.interval
        let behind = UInt64(bitPattern: now &- deadline)
        let due = behind / UInt64(interval) + 1
        let latestDue = now &- Int64(behind % UInt64(interval))
        machine.nextDeadline = latestDue.addingSaturating(interval)
        let missedWhileSuspended = machine.missedWhileSuspended
        machine.missedWhileSuspended = false
        let count = Int(clamping: due)
        func fire(_ scheduled: Int64, _ count: Int) -> Step {
            machine.fireCount = machine.fireCount.addingSaturating(1)
            let skipped = skippedDeadlines
            skippedDeadlines = 0
            return .run(handler, TimerFire(
                scheduledDeadline: TimerInstant(kind: kind, nanoseconds: scheduled),
                firedAt: TimerInstant(kind: kind, nanoseconds: now),
                deadlineCount: count,
                skippedDeadlineCount: skipped,
                sequenceNumber: machine.fireCount))
        }
        // A deadline is missed when its successor has come too, or when it passed while the timer
        // was suspended; the latest due deadline is otherwise merely late, and fires (C5).
        guard due > 1 || missedWhileSuspended else { return fire(deadline, 1) }
        switch missedDeadlinePolicy {
        case .coalesce:
            return fire(deadline, count)
        case .skip:
            if missedWhileSuspended {
                // Every due deadline was missed: nothing fires now; the next fire reports them.
                skippedDeadlines = skippedDeadlines.addingSaturating(count)
                return nextStep(now: now, &state)
            }
            skippedDeadlines = skippedDeadlines.addingSaturating(count - 1)
            return fire(latestDue, 1)
        case .burst(let maxFires):
            let fires = min(count, maxFires)
            if fires > 1 {
                burst = (deadline.addingSaturating(interval), fires - 1, count - fires + 1)
                return fire(deadline, 1)
            }
            return fire(deadline, count)
        }
    }

    // MARK: Validation (C17)

    static func validatedInterval(_ interval: Duration) throws(TimerError) -> Int64 {
        guard interval > .zero else { throw .nonPositiveInterval(interval) }
        guard let nanoseconds = interval.exactNanoseconds else { throw .durationOverflow }
        // Sub-nanosecond intervals round up to 1 ns rather than to a zero interval.
        return max(nanoseconds, 1)
    }

    static func validatedTolerance(_ tolerance: Duration) throws(TimerError) -> Int64 {
        guard tolerance >= .zero else { throw .negativeTolerance(tolerance) }
        guard let nanoseconds = tolerance.exactNanoseconds else { throw .durationOverflow }
        return nanoseconds
    }

    /// The first deadline, in nanoseconds on the clock; `nil` start means one interval from now.
    /// The clock is read only for starts relative to now.
    static func firstDeadline(_ start: TimerStart?, interval: Int64, now readNow: () -> Int64, kind: TimerClock.Kind) throws(TimerError) -> Int64 {
        func offset(_ delay: Duration) throws(TimerError) -> Int64 {
            guard let nanoseconds = delay.exactNanoseconds else { throw .durationOverflow }
            let now = readNow()
            let (deadline, overflow) = now.addingReportingOverflow(nanoseconds)
            guard !overflow else { throw .durationOverflow }
            return deadline
        }
        switch start {
        case nil:
            let (deadline, overflow) = readNow().addingReportingOverflow(interval)
            guard !overflow else { throw .durationOverflow }
            return deadline
        case .now?:
            return readNow()
        case .after(let delay)?:
            return try offset(delay)
        case .at(let instant)?:
            guard instant.clockKind == kind else { throw .clockMismatch(expected: kind, got: instant.clockKind) }
            return instant.nanoseconds
        case .date(let date)?:
            let wall = TimerInstant(date)
            if kind == .wall { return wall.nanoseconds }
            // The delay until the date, on this clock. A date far in the past saturates to the
            // clock's origin: a deadline in the past, which fires at once (C17).
            let delay = SystemClock.now(.wall).duration(to: wall.nanoseconds)
            return max(0, readNow().addingSaturating(delay))
        }
    }
}
