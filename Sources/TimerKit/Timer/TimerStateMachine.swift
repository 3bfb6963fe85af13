/// A timer's state and every transition of it, as a value: no engine, no handler, no lock, no
/// clock — instants are plain nanoseconds, and each transition returns what its caller must do.
///
/// The timer (``ScheduledTimer``) holds one, guarded by its shard's lock, and turns the returned
/// actions into effects: the engine carries out a ``StoreAction`` on its store, and its delivery
/// turns a ``Step`` into a run of the handler or a store insert. So the data flows one way —
/// the call, the transition, the store or the delivery — and the rules of C5–C10 can be tested
/// on the machine alone, with integers (`TimerStateMachineTests`).
///
/// Invariant: a timer is in its shard's store exactly when it is active, not suspended and not
/// running. "Running" means a delivery is under way: the timer was handed to its target, and the
/// holder of that delivery asks ``nextStep(now:isShutDown:)`` until it answers with something
/// other than a run. So runs never overlap (C14), and what a fire means is decided at the moment
/// the run starts, when suspension, invalidation and the clock are all known.
struct TimerStateMachine {
    enum Lifecycle {
        case active
        case invalid
    }

    /// A fire as the machine decides it, in the clock's nanoseconds (``TimerFire`` once given its
    /// clock).
    struct Fire: Equatable {
        var scheduledDeadline: Int64
        var firedAt: Int64
        var deadlineCount: Int
        var skippedDeadlineCount: Int
        var sequenceNumber: Int
    }

    /// What the holder of a delivery does next.
    enum Step: Equatable {
        /// Run the handler once with this fire, then ask again.
        case run(Fire)
        /// Run the handler for the last time: the timer is invalid now (C6).
        case runFinal(Fire)
        /// Nothing is due: the timer goes back into the store under this deadline.
        case store(deadline: Int64)
        /// Nothing to run: the timer is suspended, or was invalidated meanwhile. It stays out of
        /// the store.
        case park
        /// The clock was found shut down: the timer is invalid now; release its handler and
        /// notify.
        case invalidated
    }

    /// What a transition asks of the timer's place in its shard's store, so that the invariant
    /// holds again.
    enum StoreAction: Equatable {
        /// Nothing changes.
        case none
        /// Store the timer under ``nextDeadline``, moving its entry if it has one.
        case place
        /// Take the timer out of the store if it is there.
        case remove
        /// Take the timer out of the store if it is there and hand it to its delivery: the
        /// machine is running now, and the caller holds the delivery.
        case deliver
    }

    /// The rest of a burst of missed deadlines being fired back to back (C5).
    struct Burst: Equatable {
        var nextScheduled: Int64
        var fires: Int
        var lastCount: Int
    }

    /// What only a timer that missed deadlines needs: the deadlines skipped since its last fire
    /// and the rest of a burst. Boxed (`indirect`), so that a pending timer pays eight bytes for
    /// it, and a value still: a machine copied in a test is independent of the original.
    private enum CatchUp {
        case none
        indirect case pending(skipped: Int, burst: Burst?)
    }

    /// The machine's yes-or-no state, in one byte: a pending timer's object stays in the
    /// allocator's 112-byte class (BENCHMARKS.md, "Memory per pending timer").
    private struct Flags: OptionSet {
        let rawValue: UInt8
        static let invalid = Flags(rawValue: 1 << 0)
        static let suspended = Flags(rawValue: 1 << 1)
        static let running = Flags(rawValue: 1 << 2)
        static let missedWhileSuspended = Flags(rawValue: 1 << 3)
        static let manualFirePending = Flags(rawValue: 1 << 4)
        static let releasesSilentlyWhenSuspended = Flags(rawValue: 1 << 5)
    }

    /// The next deadline on the grid (C4): the first deadline plus a whole number of intervals.
    private(set) var nextDeadline: Int64
    /// The repeat interval in nanoseconds; 0 for a one-shot timer.
    private(set) var interval: Int64
    /// How many runs of the handler were decided (less those `invalidate()` stopped).
    private(set) var fireCount = 0
    /// ``MissedDeadlinePolicy`` in eight bytes: 0 coalesce, -1 skip, n ≥ 1 burst of at most n.
    private let policyCode: Int
    private var catchUp = CatchUp.none
    private var flags: Flags = []

    private(set) var lifecycle: Lifecycle {
        get { flags.contains(.invalid) ? .invalid : .active }
        set { set(.invalid, newValue == .invalid) }
    }
    private(set) var isSuspended: Bool {
        get { flags.contains(.suspended) }
        set { set(.suspended, newValue) }
    }
    /// Whether a delivery holds the timer (see the invariant above).
    private(set) var isRunning: Bool {
        get { flags.contains(.running) }
        set { set(.running, newValue) }
    }
    /// Whether `nextDeadline` passed while the timer was suspended: then it counts as missed (C5, C9).
    private var missedWhileSuspended: Bool {
        get { flags.contains(.missedWhileSuspended) }
        set { set(.missedWhileSuspended, newValue) }
    }
    /// Whether a run requested by `fire()` has not started yet (further requests merge into it).
    private var hasPendingManualFire: Bool {
        get { flags.contains(.manualFirePending) }
        set { set(.manualFirePending, newValue) }
    }

    /// Whether the timer's release while suspended is part of the design (an `AsyncSequence` that
    /// ended its iteration): no lifetime warning then (C12).
    var releasesSilentlyWhenSuspended: Bool {
        get { flags.contains(.releasesSilentlyWhenSuspended) }
        set { set(.releasesSilentlyWhenSuspended, newValue) }
    }

    @inline(__always)
    private mutating func set(_ flag: Flags, _ isOn: Bool) {
        if isOn { flags.insert(flag) } else { flags.remove(flag) }
    }

    init(firstDeadline: Int64, interval: Int64, policy: MissedDeadlinePolicy) {
        self.nextDeadline = firstDeadline
        self.interval = interval
        self.policyCode =
            switch policy {
            case .coalesce: 0
            case .skip: -1
            case .burst(let maxFires): maxFires
            }
    }

    var isRepeating: Bool { interval > 0 }

    var policy: MissedDeadlinePolicy {
        switch policyCode {
        case 0: .coalesce
        case -1: .skip
        default: .burst(maxFires: policyCode)
        }
    }

    /// Grid deadlines that passed without a run of their own under ``MissedDeadlinePolicy/skip``
    /// since the last fire; the next fire reports them (C5).
    var skippedDeadlines: Int {
        if case .pending(let skipped, _) = catchUp { return skipped }
        return 0
    }

    private var burst: Burst? {
        if case .pending(_, let burst) = catchUp { return burst }
        return nil
    }

    private mutating func setCatchUp(skipped: Int, burst: Burst?) {
        catchUp = skipped == 0 && burst == nil ? .none : .pending(skipped: skipped, burst: burst)
    }

    // MARK: Transitions from the timer's API

    /// The timer joins its engine, suspended or not.
    mutating func register(suspended: Bool) -> StoreAction {
        isSuspended = suspended
        return suspended ? .none : .place
    }

    /// `fire()` (C7): asks for a run with `deadlineCount` 0. Returns whether it was accepted
    /// (`false` once invalid), and `.deliver` when no delivery holds the timer: the caller holds
    /// it now. Otherwise the holder runs it next; requests merge until it starts.
    mutating func requestManualFire(isShutDown: Bool) -> (accepted: Bool, action: StoreAction) {
        guard lifecycle == .active, !isShutDown else { return (false, .none) }
        hasPendingManualFire = true
        guard !isRunning else { return (true, .none) }
        isRunning = true
        return (true, .deliver)
    }

    /// `suspend()` (C9). Returns whether the timer was suspended by this call.
    mutating func suspend() -> (changed: Bool, action: StoreAction) {
        guard lifecycle == .active, !isSuspended else { return (false, .none) }
        isSuspended = true
        return (true, .remove)
    }

    /// `resume()` (C9): a deadline that passed while suspended is missed (C5), and the timer is
    /// delivered at once to say what that means under its policy.
    mutating func resume(now: Int64, isShutDown: Bool) -> (changed: Bool, action: StoreAction) {
        guard lifecycle == .active, isSuspended, !isShutDown else { return (false, .none) }
        isSuspended = false
        guard !isRunning else { return (true, .none) }
        if nextDeadline <= now && nextDeadline != .max {
            missedWhileSuspended = true
            isRunning = true
            return (true, .deliver)
        }
        return (true, .place)
    }

    /// `reschedule(at:every:)` (C10): a new grid from `deadline`. The caller checked that the
    /// timer is active.
    mutating func reschedule(to deadline: Int64, interval newInterval: Int64) -> StoreAction {
        nextDeadline = deadline
        interval = newInterval
        catchUp = .none
        missedWhileSuspended = false
        return !isSuspended && !isRunning ? .place : .remove
    }

    /// Makes the timer invalid (C8); releases nothing. Returns whether it was active: then the caller releases the
    /// handler and calls the invalidation hook. The caller takes it out of the store.
    @discardableResult
    mutating func invalidate() -> Bool {
        guard lifecycle == .active else { return false }
        lifecycle = .invalid
        hasPendingManualFire = false
        // The catch-up record stays: an invalid machine never reads it, and letting it go here
        // would release inside the caller's access to the timer's machine.
        return true
    }

    /// A decided run that `invalidate()` stopped before it began is not counted: `fireCount` read
    /// after `invalidate()` returns is final.
    mutating func uncountStoppedRun() {
        fireCount -= 1
    }

    // MARK: Transitions from the engine

    /// The engine took the timer out of its store because its key came: a delivery holds it now.
    mutating func takeForDelivery() {
        isRunning = true
    }

    /// Whether the holder of the delivery would run the handler again right now.
    func hasWork(now: Int64) -> Bool {
        guard lifecycle == .active else { return false }
        let isDue = nextDeadline <= now && nextDeadline != .max
        return hasPendingManualFire || (!isSuspended && (burst != nil || isDue))
    }

    /// Decides what the holder of the delivery does next, at `now` (C2–C7). Any answer but a run
    /// ends the delivery: the machine is not running afterwards.
    mutating func nextStep(now: Int64, isShutDown: Bool) -> Step {
        if isShutDown && lifecycle == .active {
            invalidate()
            isRunning = false
            return .invalidated
        }
        guard lifecycle == .active else {
            isRunning = false
            return .park
        }
        if hasPendingManualFire {
            hasPendingManualFire = false
            let fire = countedFire(scheduled: now, now: now, deadlineCount: 0, skipped: 0)
            return isRepeating ? .run(fire) : finalRun(fire)
        }
        if isSuspended {
            isRunning = false
            return .park
        }
        if let current = burst {
            let last = current.fires == 1
            let rest =
                last ? nil : Burst(nextScheduled: current.nextScheduled.addingSaturating(interval), fires: current.fires - 1, lastCount: current.lastCount)
            setCatchUp(skipped: skippedDeadlines, burst: rest)
            return .run(countedFire(scheduled: current.nextScheduled, now: now, deadlineCount: last ? current.lastCount : 1, skipped: 0))
        }
        let deadline = nextDeadline
        // `Int64.max` is the end of time: a deadline there (a saturated grid) never comes (C17).
        guard deadline <= now && deadline != .max else {
            isRunning = false
            return .store(deadline: deadline)
        }
        if !isRepeating {
            // C6: a one-shot timer is invalid from the moment its fire starts.
            return finalRun(countedFire(scheduled: deadline, now: now, deadlineCount: 1, skipped: 0))
        }
        // Count the grid deadlines that have come: deadline, deadline + i, …, deadline + (n-1)·i ≤ now.
        // Unsigned arithmetic: now - deadline can exceed Int64.max when the first deadline was far
        // in the past, and must neither trap nor wrap (C17).
        let behind = UInt64(bitPattern: now &- deadline)
        let due = behind / UInt64(interval) + 1
        let latestDue = now &- Int64(behind % UInt64(interval))
        nextDeadline = latestDue.addingSaturating(interval)
        let wasMissedWhileSuspended = missedWhileSuspended
        missedWhileSuspended = false
        let count = Int(clamping: due)
        // A deadline is missed when its successor has come too, or when it passed while the timer
        // was suspended; the latest due deadline is otherwise merely late, and fires (C5).
        guard due > 1 || wasMissedWhileSuspended else { return gridFire(deadline, count: 1, now: now) }
        switch policy {
        case .coalesce:
            return gridFire(deadline, count: count, now: now)
        case .skip:
            if wasMissedWhileSuspended {
                // Every due deadline was missed: nothing fires now; the next fire reports them. The
                // next deadline is after `now`, so the timer goes back to the store.
                setCatchUp(skipped: skippedDeadlines.addingSaturating(count), burst: nil)
                isRunning = false
                return .store(deadline: nextDeadline)
            }
            setCatchUp(skipped: skippedDeadlines.addingSaturating(count - 1), burst: nil)
            return gridFire(latestDue, count: 1, now: now)
        case .burst(let maxFires):
            let fires = min(count, maxFires)
            guard fires > 1 else { return gridFire(deadline, count: count, now: now) }
            let step = gridFire(deadline, count: 1, now: now)
            setCatchUp(skipped: 0, burst: Burst(nextScheduled: deadline.addingSaturating(interval), fires: fires - 1, lastCount: count - fires + 1))
            return step
        }
    }

    /// A fire of a repeating timer for a grid deadline, reporting the deadlines skipped before it.
    private mutating func gridFire(_ scheduled: Int64, count: Int, now: Int64) -> Step {
        let skipped = skippedDeadlines
        setCatchUp(skipped: 0, burst: burst)
        return .run(countedFire(scheduled: scheduled, now: now, deadlineCount: count, skipped: skipped))
    }

    private mutating func countedFire(scheduled: Int64, now: Int64, deadlineCount: Int, skipped: Int) -> Fire {
        fireCount = fireCount.addingSaturating(1)
        return Fire(scheduledDeadline: scheduled, firedAt: now, deadlineCount: deadlineCount, skippedDeadlineCount: skipped, sequenceNumber: fireCount)
    }

    /// The last run: the timer is invalid from its start (C6), and no delivery holds it after.
    private mutating func finalRun(_ fire: Fire) -> Step {
        invalidate()
        isRunning = false
        return .runFinal(fire)
    }
}
