/// A one-shot closure waiting in a clock's engine: the lightest timer TimerKit has.
///
/// Schedule one with ``TimerClock/schedule(at:tolerance:delivery:_:)``. Where a ``ScheduledTimer``
/// is an object with a full life — repeat, suspend, resume, reschedule, `fire()` — a scheduled
/// callback is just an entry in the engine's store and this handle to it: no object is allocated
/// per callback (the engine keeps 48 bytes for it in a slab), and scheduling and cancelling are
/// O(1) with no system call. It is made for the timer a server has most of: the timeout that is
/// almost always cancelled before it fires.
///
/// ```swift
/// let timeout = try TimerClock.continuous.schedule(at: .after(.seconds(30))) {
///     connection.close(reason: .idle)
/// }
/// // … the request completes in time:
/// timeout.cancel()
/// ```
///
/// What it keeps of the timer contract:
/// - C1: it runs on the clock it was scheduled on; C2: never before its deadline; C3: within its
///   tolerance, which the engine uses to share wake-ups;
/// - C6: it runs once; inside its closure ``isPending`` is already `false`;
/// - C8: ``cancel()`` is idempotent, safe from any thread, stops the callback up to the instant its
///   run begins (also once it is due and on its way to its queue), and releases the closure (and
///   all it captured) before it returns; ``cancelAndWait()`` also waits for a run under way;
/// - C10: ``reschedule(at:)`` moves it in place while it waits for its deadline;
/// - C12: dropping the handle does not cancel it; the engine holds the closure until it runs;
/// - C13: the handle is a value, safe to copy and use from any thread;
/// - C15: the closure runs on the engine thread or on a queue;
/// - C16: it costs one store entry; C17: bad input throws ``TimerError``.
///
/// When its clock is shut down, a pending callback is released without running.
public struct ScheduledCallback: Sendable, Hashable, CustomStringConvertible {
    /// The engine, unretained: a shared clock's engine lives as long as the process, and a
    /// dedicated one is kept alive by `retainedEngine`. A handle of the shared clocks so costs no
    /// reference counting on the engine, whose count would otherwise bounce between the cores of
    /// every thread that schedules.
    private let unretainedEngine: Unmanaged<TimerEngine>
    /// The engine of a dedicated or virtual clock, retained; `nil` for a shared clock's.
    private let retainedEngine: TimerEngine?
    let index: Int32
    let sequence: UInt32

    /// The engine (retained by the caller for as long as it uses it).
    var engine: TimerEngine { unretainedEngine.takeUnretainedValue() }

    /// `engine` is borrowed: a shared clock's handle is made without touching its reference count.
    init(engine: borrowing TimerEngine, index: Int32, sequence: UInt32) {
        unretainedEngine = .passUnretained(copy engine)
        retainedEngine = engine.isShared ? nil : copy engine
        self.index = index
        self.sequence = sequence
    }

    /// The clock the callback was scheduled on.
    public var clock: TimerClock { TimerClock(engine: engine) }

    /// Whether the callback's run has not begun and still can: `true` while it waits for its
    /// deadline and while it is due and on its way to its delivery target; `false` once its run has
    /// begun (also inside the closure), once it was cancelled, and once its clock was shut down.
    public var isPending: Bool { unretainedEngine._withUnsafeGuaranteedRef { $0.isPending(index, sequence: sequence) } }

    /// Cancels the callback if its run has not begun (C8).
    ///
    /// Idempotent and safe from any thread. A callback can be cancelled until its run begins: while
    /// it waits for its deadline, and also once it is due and handed to its queue. A run begins at
    /// one atomic step the delivering thread takes immediately before it calls the closure.
    ///
    /// When it returns `true`, the closure will never run and it, with everything it captured, has
    /// been released. When it returns `false`, the closure ran, is running (see
    /// ``cancelAndWait()``), was cancelled before, or its clock was shut down.
    ///
    /// - Returns: `true` if this call cancelled the callback.
    @discardableResult
    public func cancel() -> Bool { unretainedEngine._withUnsafeGuaranteedRef { $0.cancel(index, sequence: sequence) } }

    /// Cancels the callback if its run has not begun (``cancel()``); otherwise waits until a run
    /// under way has returned (C8). When this returns, the closure is not running and never will.
    ///
    /// Called from a task that the closure itself waits for, this never returns.
    ///
    /// - Returns: `true` if this call cancelled the callback before its run began.
    @discardableResult
    public func cancelAndWait() async -> Bool {
        if cancel() { return true }
        await engine.waitForRun(ofCallback: index, sequence: sequence)
        return false
    }

    /// Moves the callback to a new deadline in place (C10) — the reset of an idle timeout on every
    /// request: the same handle, no allocation, O(1), its tolerance and delivery kept. Among
    /// callbacks due at the same instant it keeps the place its creation gave it.
    ///
    /// ```swift
    /// // on every request of the connection:
    /// if try !idleTimeout.reschedule(at: .after(.seconds(30))) {
    ///     // it fired (or is firing) already: the connection is being closed
    /// }
    /// ```
    ///
    /// A deadline in the past makes the callback due at once (C2 still holds: it runs no earlier
    /// than its new deadline).
    ///
    /// - Returns: Whether the callback was moved: `false` once it has been taken for its run — it
    ///   came due and was handed to its delivery, or it ran — and after ``cancel()`` or a shutdown
    ///   of its clock. Then schedule a new one if you still need it.
    /// - Throws: ``TimerError/durationOverflow`` for a deadline beyond the clock's range;
    ///   ``TimerError/clockMismatch(expected:got:)`` for an instant of another clock.
    @discardableResult
    public func reschedule(at start: TimerStart) throws(TimerError) -> Bool {
        let engine = engine
        let deadline = try ScheduledTimer.firstDeadline(start, interval: 0, now: { engine.now() }, kind: engine.kind)
        return engine.move(index, sequence: sequence, to: deadline)
    }

    public static func == (lhs: ScheduledCallback, rhs: ScheduledCallback) -> Bool {
        lhs.engine === rhs.engine && lhs.index == rhs.index && lhs.sequence == rhs.sequence
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(engine))
        hasher.combine(index)
        hasher.combine(sequence)
    }

    public var description: String { "ScheduledCallback(\(engine.kind) #\(sequence))" }
}
