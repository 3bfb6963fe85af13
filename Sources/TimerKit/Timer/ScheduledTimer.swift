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

    // The stored fields are ordered so that the small ones pack together after the eight-byte
    // ones, in the tail of the state machine: a pending timer's object is 104 bytes, the
    // allocator's 112-byte class (BENCHMARKS.md, "Memory per pending timer"). What few timers use
    // lives in an `Extras` object that takes the delivery's place (`setup`).

    /// The engine, unretained for a shared clock's (which lives as long as the process: no reference
    /// count on an object that every core would touch on every timer's creation and release), and
    /// retained by hand for a dedicated or virtual clock's, released in `deinit`.
    private let unmanagedEngine: Unmanaged<TimerEngine>
    /// Where the handler runs, or the extras that say so among other things: one word.
    private let setup: Setup

    // Guarded by its shard's lock (``withShard(_:)``).
    var handler: Handler?
    /// The timer's state and its transitions (C5–C10): every method below is one transition, whose
    /// returned action the engine carries out.
    var machine: TimerStateMachine
    /// The shard the timer lives in (``shard``) in the low seven bits, and whether it is
    /// ``TimerPrecision/high`` in the high one.
    private let placement: UInt8
    /// Where the run the engine decided on stands (C8): changed under its shard's lock, except for
    /// the running thread's two steps around the handler call.
    let runGate = RunGate()
    /// The tolerance in nanoseconds, saturated at `UInt32.max` (4.29 s, the most the store uses:
    /// ``TimerEntry/slack``); a longer one is kept exactly in the extras.
    private let narrowTolerance: UInt32
    /// Creation order in its shard, truncated to 32 bits like the store's; breaks ties between
    /// equal deadlines (compared with wrapping arithmetic). Written by the engine.
    var id: UInt32 = 0
    /// The index of the timer's entry in its shard's store, or -1 when it is not stored. The
    /// engine's own field: only the engine reads or writes it.
    var storeSlot: Int32 = -1

    /// Where the handler runs, in one word: the extras take the delivery's place in the few timers
    /// that have them.
    private enum Setup {
        case engineThread
        case queue(DispatchQueue)
        case extended(Extras)
    }

    /// What few timers use: an invalidation hook (those behind an `AsyncSequence`), or a tolerance
    /// longer than 4.29 s.
    private final class Extras {
        let delivery: TimerDelivery
        let tolerance: Int64
        /// Guarded by its shard's lock.
        var onInvalidate: (@Sendable () -> Void)?

        init(delivery: TimerDelivery, tolerance: Int64, onInvalidate: (@Sendable () -> Void)?) {
            self.delivery = delivery
            self.tolerance = tolerance
            self.onInvalidate = onInvalidate
        }
    }

    /// Where the handler runs (C15).
    public var delivery: TimerDelivery {
        switch setup {
        case .engineThread: .engineThread
        case .queue(let queue): .queue(queue)
        case .extended(let extras): extras.delivery
        }
    }

    /// The tolerance in nanoseconds.
    var toleranceNanoseconds: Int64 {
        guard narrowTolerance == .max, case .extended(let extras) = setup else { return Int64(narrowTolerance) }
        return extras.tolerance
    }

    /// Whether the timer is ``TimerPrecision/high``: the engine takes it out of the store shortly
    /// before its deadline and waits for the deadline actively.
    var isPrecise: Bool { placement & 0x80 != 0 }

    /// The engine's shard the timer lives in, for good: the creating thread's (``EngineShard``).
    var shard: UInt8 { placement & 0x7F }

    /// Called once the timer is invalid (the `AsyncSequence` behind it ends); set when the timer is
    /// made, cleared once called. Guarded by its shard's lock.
    var onInvalidate: (@Sendable () -> Void)? {
        get {
            guard case .extended(let extras) = setup else { return nil }
            return extras.onInvalidate
        }
        set {
            guard case .extended(let extras) = setup else {
                precondition(newValue == nil, "TimerKit: an invalidation hook is given when the timer is made")
                return
            }
            extras.onInvalidate = newValue
        }
    }

    /// The policy for missed deadlines (C5).
    public var missedDeadlinePolicy: MissedDeadlinePolicy { machine.policy }

    init(
        engine: TimerEngine,
        firstDeadline: Int64,
        interval: Int64,
        tolerance: Int64,
        precision: TimerPrecision = .standard,
        policy: MissedDeadlinePolicy,
        delivery: TimerDelivery,
        onInvalidate: (@Sendable () -> Void)? = nil,
        handler: @escaping Handler
    ) {
        self.unmanagedEngine = engine.isShared ? .passUnretained(engine) : .passRetained(engine)
        self.narrowTolerance = UInt32(clamping: tolerance)
        if onInvalidate != nil || tolerance > Int64(UInt32.max) {
            self.setup = .extended(Extras(delivery: delivery, tolerance: tolerance, onInvalidate: onInvalidate))
        } else {
            switch delivery.target {
            case .engineThread: self.setup = .engineThread
            case .queue(let queue): self.setup = .queue(queue)
            }
        }
        // A shard number fits in seven bits: an engine has at most `EngineShard.maximumCount` (16).
        self.placement = UInt8(truncatingIfNeeded: engine.currentShard) | (precision.isHigh ? 0x80 : 0)
        self.machine = TimerStateMachine(firstDeadline: firstDeadline, interval: interval, policy: policy)
        self.handler = handler
    }

    deinit {
        // C12: a scheduled timer is never stopped by dropping its handle — except a suspended one,
        // which nobody can resume any more. Say so in debug builds. No other reference exists here,
        // so reading the state without the lock is safe.
        #if DEBUG
        if machine.lifecycle == .active && machine.isSuspended && !machine.releasesSilentlyWhenSuspended
            && !engine.hasShutDown.load(ordering: .acquiring)
        {
            ScheduledTimer.reportLifetimeWarning(
                "TimerKit: a suspended timer was released with its last handle, so it can never be resumed "
                    + "and will not fire again. Call invalidate() before letting it go to say that this is intended.",
                timer: ObjectIdentifier(self))
        }
        #endif
        if !engine.isShared { unmanagedEngine.release() }
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

    /// The timer's engine, kept alive by the timer.
    var engine: TimerEngine { unmanagedEngine.takeUnretainedValue() }

    /// Runs `body` with the engine, borrowed, under the lock of the timer's shard, which guards the
    /// timer's state.
    @inline(__always)
    func withShard<Result>(_ body: (TimerEngine, inout EngineShard.State) -> Result) -> Result {
        unmanagedEngine._withUnsafeGuaranteedRef { engine in engine.withShard(Int(shard)) { body(engine, &$0) } }
    }

    /// Runs `body` with the engine, borrowed: no reference counting on it.
    @inline(__always)
    func withEngine<Result>(_ body: (TimerEngine) -> Result) -> Result {
        unmanagedEngine._withUnsafeGuaranteedRef(body)
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
        withShard { _, state in machine.lifecycle == .active && !state.isShutDown }
    }

    /// Whether the timer is suspended (C9).
    public var isSuspended: Bool { withShard { _, _ in machine.isSuspended } }

    /// The repeat interval, or `nil` for a one-shot timer.
    public var interval: Duration? {
        withShard { _, _ in machine.isRepeating ? .nanoseconds(machine.interval) : nil }
    }

    /// The next deadline on the timer's grid, or `nil` once the timer is invalid.
    ///
    /// While the timer is suspended this is the deadline it will fire for (or count as missed) when
    /// resumed.
    public var nextDeadline: TimerInstant? {
        withShard { engine, state in
            guard machine.lifecycle == .active, !state.isShutDown else { return nil }
            return TimerInstant(kind: engine.kind, nanoseconds: machine.nextDeadline)
        }
    }

    /// How many times the handler has started running.
    public var fireCount: Int { withShard { _, _ in machine.fireCount } }

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
        let (requested, deliverNow) = withShard { engine, state in
            let (accepted, action) = machine.requestManualFire(isShutDown: state.isShutDown)
            return (accepted, engine.carryOut(action, for: self, &state))
        }
        if deliverNow { _ = withEngine { $0.deliver(self) } }
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
        let (released, onInvalidate) = withShard { engine, state in
            _ = engine.carryOut(.remove, for: self, &state)
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
        guard runGate.isUnderWay else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waits = withShard { _, state -> Bool in
                var waiting = state.runWaiters.removeValue(forKey: ObjectIdentifier(self)) ?? []
                let waits = runGate.addWaiter(continuation, to: &waiting)
                if !waiting.isEmpty { state.runWaiters[ObjectIdentifier(self)] = waiting }
                return waits
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
        withShard { engine, state in
            let (changed, action) = machine.suspend()
            _ = engine.carryOut(action, for: self, &state)
            return changed
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
        let (resumed, deliverNow) = withShard { engine, state in
            let (changed, action) = machine.resume(now: engine.now(state), isShutDown: state.isShutDown)
            return (changed, engine.carryOut(action, for: self, &state))
        }
        if deliverNow { _ = withEngine { $0.deliver(self) } }
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
        let outcome = withShard { engine, state -> Result<Void, TimerError> in
            guard machine.lifecycle == .active, !state.isShutDown else { return .failure(.timerInvalidated) }
            let newInterval = intervalNanoseconds ?? machine.interval
            // The clock is read only for a start relative to now.
            let deadline: Int64
            do throws(TimerError) {
                deadline = try Self.firstDeadline(start, interval: newInterval, now: { engine.now(state) }, kind: engine.kind)
            } catch {
                return .failure(error)
            }
            _ = engine.carryOut(transition { $0.reschedule(to: deadline, interval: newInterval) }, for: self, &state)
            return .success(())
        }
        try outcome.get()
    }
}
