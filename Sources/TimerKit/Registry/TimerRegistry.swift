import Foundation

/// Timers kept under keys: LCTimer's registry of tasks cancelled by id, done right.
///
/// Schedule one-shot or repeating work under any `Hashable & Sendable` key, then cancel, move,
/// suspend, resume or fire it by key — each in O(1), from any thread (C13). Every entry is a timer
/// on the registry's clock: one engine entry, no kernel object (C16).
///
/// ```swift
/// let idle = TimerRegistry<ConnectionID>()
/// try idle.schedule(connection.id, at: .after(.seconds(30))) { id, _ in close(id) }
/// // … the connection sent a request: push its deadline back, in place.
/// try idle.reschedule(connection.id, at: .after(.seconds(30)))
/// ```
///
/// What it promises:
/// - **One entry per key.** A second schedule under a live key follows the ``Conflict`` chosen for
///   the call: replace the old work (the default), keep it, or fail with
///   ``TimerError/keyInUse(_:)``. Replacing invalidates the old timer: it never double-fires.
/// - **Keys are free again at once.** A one-shot's key is released the moment its run begins, so
///   its handler can schedule the same key again. Entries carry a generation inside the registry,
///   so a late event from an old entry never touches a newer one under the same key.
/// - **Cancelling says what happened** (``CancelOutcome``): the work was stopped before it ran
///   again, a run is under way (no new one will start, C8), or there was nothing under the key.
/// - **Lifetime.** The registry invalidates everything it holds when it is released. Kept in a
///   property of an object and filled with owner-bound work, it is that object's set of timers:
///   all gone when the object goes, with no `invalidate()` in `deinit`. Work does not keep the
///   registry alive: dropping the registry ends its work.
public final class TimerRegistry<Key: Hashable & Sendable>: @unchecked Sendable {
    /// What a second schedule under a live key does.
    public enum Conflict: Sendable, Hashable {
        /// Invalidate the old work and schedule the new (the default).
        case replace
        /// Keep the old work; the schedule returns `false`.
        case keep
        /// Keep the old work; the schedule throws ``TimerError/keyInUse(_:)``.
        case fail
    }

    /// What ``cancel(_:)`` found.
    public enum CancelOutcome: Sendable, Hashable {
        /// The work was waiting (or suspended): it will not run again.
        case cancelled
        /// A run of the work is under way on another thread: it finishes, and no new run starts
        /// (C8).
        case cancelledWhileRunning
        /// Nothing is under the key: it never was, was cancelled, or its one-shot has run.
        ///
        /// The registry does not remember keys whose work is over — a registry of unique keys
        /// (request ids) would grow without bound. To know whether a one-shot ran, let its
        /// handler record it, or look before cancelling: ``entry(_:)`` shows a live key's
        /// ``Entry/fireCount``.
        case notFound
    }

    /// One live key, as ``entries`` shows it.
    public struct Entry: Sendable {
        /// The key.
        public let key: Key
        /// The next deadline, on the registry's clock (a calendar entry's on the wall clock, or the
        /// registry's virtual clock).
        public let nextDeadline: TimerInstant?
        /// The repeat interval, or `nil` for a one-shot or a calendar entry.
        public let interval: Duration?
        /// How many runs have begun.
        public let fireCount: Int
        /// Whether the work is suspended.
        public let isSuspended: Bool
    }

    struct Slot {
        /// A timer on the registry's clock, or a calendar timer.
        let timer: any RegistryWork
        let generation: UInt64
    }

    struct State {
        var slots: [Key: Slot] = [:]
        /// One-shots whose run is under way: their keys are already free.
        var running: [Key: Slot] = [:]
        var nextGeneration: UInt64 = 0
    }

    /// The clock every entry runs on.
    public let clock: TimerClock
    /// Where handlers run unless a schedule says otherwise.
    public let delivery: TimerDelivery
    private let state = Locked(State())

    /// Creates an empty registry whose work runs on `clock` and, unless a schedule says otherwise,
    /// is delivered to `delivery`.
    public init(clock: TimerClock = .continuous, delivery: TimerDelivery = .engineThread) {
        self.clock = clock
        self.delivery = delivery
    }

    deinit {
        for slot in state.withLock({ $0.slots.values }) { slot.timer.invalidate() }
    }

    // MARK: Scheduling

    /// Schedules work under `key`: once at `start`, or, with `interval`, repeating on the grid
    /// `start + k·interval` (C4).
    ///
    /// - Parameters:
    ///   - key: The key to keep the work under.
    ///   - start: The first (or only) deadline.
    ///   - interval: The repeat interval; `nil` for a one-shot.
    ///   - tolerance: See C3; zero by default.
    ///   - missedDeadlines: See C5; coalesce by default.
    ///   - delivery: Where the handler runs; the registry's delivery by default.
    ///   - conflict: What to do if work is already under `key`; replace it by default.
    ///   - handler: Called with the key and the fire.
    /// - Returns: `true` if the work was scheduled; `false` if `conflict` is ``Conflict/keep`` and
    ///   the key was in use.
    /// - Throws: ``TimerError/keyInUse(_:)`` for ``Conflict/fail`` on a live key, and the errors of
    ///   ``ScheduledTimer`` for bad input.
    @discardableResult
    public func schedule(
        _ key: Key,
        at start: TimerStart,
        every interval: Duration? = nil,
        tolerance: Duration = .zero,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        delivery: TimerDelivery? = nil,
        onConflict conflict: Conflict = .replace,
        _ handler: @escaping @Sendable (Key, TimerFire) -> Void
    ) throws(TimerError) -> Bool {
        try schedule(
            key, at: start, every: interval, tolerance: tolerance, missedDeadlines: missedDeadlines, delivery: delivery,
            onConflict: conflict, TimerHandler(handler))
    }

    /// Schedules work under `key` whose handler is a ``TimerHandler``: bound to an owner held
    /// weakly (C11), on the main actor (C15), or both. Once an owner is gone, the work under the
    /// key is cancelled at its next deadline without calling the handler.
    ///
    /// The parameters mean what they mean for the closure form; a main-actor handler is delivered
    /// on the main queue whatever the registry's delivery.
    /// - Throws: The errors of the closure form, and ``TimerError/conflictingDelivery(_:)`` for a
    ///   main-actor handler given a delivery other than the main queue.
    @discardableResult
    public func schedule(
        _ key: Key,
        at start: TimerStart,
        every interval: Duration? = nil,
        tolerance: Duration = .zero,
        missedDeadlines: MissedDeadlinePolicy = .coalesce,
        delivery: TimerDelivery? = nil,
        onConflict conflict: Conflict = .replace,
        _ handler: TimerHandler<Key, TimerFire>
    ) throws(TimerError) -> Bool {
        let delivery = try handler.delivery(delivery, otherwise: self.delivery)
        // Decide under the lock whether the key may be taken, and reserve a generation; make the
        // timer outside it (it takes its shard's lock), suspended until it is in the table.
        guard let generation = try reserveGeneration(for: key, conflict) else { return false }
        let isOneShot = interval == nil
        let timer = try ScheduledTimer.make(
            interval: interval, first: start, tolerance: tolerance, clock: clock, policy: missedDeadlines,
            delivery: delivery, suspended: true
        ) { [weak self] timer, fire in
            guard isOneShot else {
                return handler(key, fire) {
                    timer.invalidate()
                    self?.forget(key, generation: generation)
                }
            }
            // A one-shot's key is free from the moment its run begins (C6).
            self?.release(key, generation: generation)
            handler(key, fire) { timer.invalidate() }
            self?.finished(key, generation: generation)
        }
        // A later schedule of the same key may have raced past this one: the newest wins.
        return try install(timer, under: key, generation: generation, conflict: conflict)
    }

    /// Schedules work under `key` at the occurrences of a calendar schedule — a cron expression
    /// or a calendar rule — as a ``CalendarTimer`` does: on the wall clock (or the registry's
    /// clock if it is virtual), runs never overlapping, missed occurrences coalesced (C5). When
    /// the schedule ends, the key is free.
    ///
    /// ```swift
    /// try registry.schedule("digest", on: try CalendarSchedule(cron: "0 8 * * mon-fri")) { key, fire in
    ///     sendDigest(for: fire.occurrence)
    /// }
    /// ```
    ///
    /// - Returns: `true` if the work was scheduled; `false` if `conflict` is ``Conflict/keep`` and
    ///   the key was in use, or the schedule has no occurrence left (the key is left as it was).
    /// - Throws: ``TimerError/keyInUse(_:)`` for ``Conflict/fail`` on a live key;
    ///   ``TimerError/clockShutDown``.
    @discardableResult
    public func schedule(
        _ key: Key, on schedule: CalendarSchedule, delivery: TimerDelivery? = nil, onConflict conflict: Conflict = .replace,
        _ handler: @escaping @Sendable (Key, CalendarFire) -> Void
    ) throws(TimerError) -> Bool {
        // A schedule that has ended takes no key, and replaces nothing.
        let now = clock.kind == .virtual ? Date(timeIntervalSince1970: Double(clock.now.nanoseconds) / 1e9) : Date()
        guard schedule.nextOccurrence(after: now) != nil else { return false }
        guard let generation = try reserveGeneration(for: key, conflict) else { return false }
        let ended: @Sendable () -> Void = { [weak self] in self?.forget(key, generation: generation) }
        let timer = try CalendarTimer.make(
            schedule, clock: clock.kind == .virtual ? clock : .wall, delivery: delivery ?? self.delivery, suspended: true, onEnd: ended
        ) { _, fire in handler(key, fire) }
        return try install(timer, under: key, generation: generation, conflict: conflict)
    }

    /// Decides under the lock whether `key` may be taken, and reserves a generation for the new
    /// entry; `nil` when the key is in use and `conflict` keeps it.
    private func reserveGeneration(for key: Key, _ conflict: Conflict) throws(TimerError) -> UInt64? {
        try state.withLock { (state) throws(TimerError) -> UInt64? in
            if state.slots[key] != nil {
                switch conflict {
                case .replace: break
                case .keep: return nil
                case .fail: throw .keyInUse(String(describing: key))
                }
            }
            state.nextGeneration &+= 1
            return state.nextGeneration
        }
    }

    /// Puts a new entry's timer (made suspended) in the table and resumes it, unless a newer
    /// schedule of the key has raced past it or `conflict` forbids it. Returns whether it did.
    private func install(_ timer: any RegistryWork, under key: Key, generation: UInt64, conflict: Conflict) throws(TimerError) -> Bool {
        let (installed, replaced) = state.withLock { state -> (Bool, (any RegistryWork)?) in
            let current = state.slots[key]
            if current != nil && conflict != .replace { return (false, nil) }
            if let current, current.generation > generation { return (false, nil) }
            state.slots[key] = Slot(timer: timer, generation: generation)
            return (true, current?.timer)
        }
        replaced?.invalidate()
        guard installed else {
            timer.invalidate()
            if conflict == .fail { throw .keyInUse(String(describing: key)) }
            return false
        }
        timer.resume()
        // A calendar schedule that ended while its timer was being made holds no key.
        if !timer.isValid, timer is CalendarTimer { forget(key, generation: generation) }
        return true
    }

    /// Frees a one-shot's key when its run begins, unless a newer entry has taken the key.
    private func release(_ key: Key, generation: UInt64) {
        state.withLock { state in
            if let slot = state.slots[key], slot.generation == generation {
                state.slots[key] = nil
                state.running[key] = slot
            }
        }
    }

    /// Removes the entry of generation `generation`, whose owner is gone, unless a newer entry has
    /// taken the key.
    private func forget(_ key: Key, generation: UInt64) {
        state.withLock { state in
            if state.slots[key]?.generation == generation { state.slots[key] = nil }
        }
    }

    /// Forgets a one-shot's run once it has returned.
    private func finished(_ key: Key, generation: UInt64) {
        state.withLock { state in
            if state.running[key]?.generation == generation { state.running[key] = nil }
        }
    }

    // MARK: Operations by key

    /// Cancels the work under `key` (C8): once this returns, no new run of it begins.
    @discardableResult
    public func cancel(_ key: Key) -> CancelOutcome {
        let (slot, running) = state.withLock { ($0.slots.removeValue(forKey: key), $0.running[key] != nil) }
        guard let slot else { return running ? .cancelledWhileRunning : .notFound }
        slot.timer.invalidate()
        return slot.timer.isRunUnderWay ? .cancelledWhileRunning : .cancelled
    }

    /// Moves the work under `key` to a new grid in place (C10): its next deadline becomes `start`
    /// and, if given, its interval becomes `interval`. The server's "this connection just sent a
    /// request": no cancel-and-recreate.
    ///
    /// - Throws: ``TimerError/keyNotFound(_:)`` if nothing is under `key`, and the errors of
    ///   ``ScheduledTimer/reschedule(at:every:)``.
    public func reschedule(_ key: Key, at start: TimerStart, every interval: Duration? = nil) throws(TimerError) {
        try timer(for: key).reschedule(at: start, every: interval)
    }

    /// Pushes the next deadline of the work under `key` back by `delay` (forward for a negative
    /// one), in place; later deadlines follow on the grid.
    ///
    /// - Throws: ``TimerError/keyNotFound(_:)`` if nothing is under `key`; ``TimerError/durationOverflow``.
    public func postpone(_ key: Key, by delay: Duration) throws(TimerError) {
        let timer = try timer(for: key)
        guard let next = timer.nextDeadline else { throw .keyNotFound(String(describing: key)) }
        guard let nanoseconds = delay.exactNanoseconds else { throw .durationOverflow }
        let (moved, overflow) = next.nanoseconds.addingReportingOverflow(nanoseconds)
        guard !overflow else { throw .durationOverflow }
        try timer.reschedule(at: .at(TimerInstant(kind: clock.kind, nanoseconds: moved)))
    }

    /// Suspends the work under `key` (C9).
    ///
    /// - Returns: Whether this call suspended it: `false` if nothing is under `key` or it was
    ///   already suspended.
    @discardableResult
    public func suspend(_ key: Key) -> Bool { apply(to: key) { $0.suspend() } }

    /// Resumes the work under `key` (C9).
    ///
    /// - Returns: Whether this call resumed it: `false` if nothing is under `key` or it was not
    ///   suspended.
    @discardableResult
    public func resume(_ key: Key) -> Bool { apply(to: key) { $0.resume() } }

    /// Runs the work under `key` now (C7): a one-shot then ends, a repeating one keeps its grid.
    /// Who runs it and when follows ``ScheduledTimer/fire()`` exactly: with engine-thread delivery
    /// on the calling thread before this returns, unless a run is decided or under way. A calendar
    /// entry's run follows ``CalendarTimer/fire()``: on its delivery, soon after, never overlapping
    /// a run under way; its next occurrence stays.
    ///
    /// - Returns: Whether a run was requested: `false` if nothing is under `key` (or its one-shot
    ///   began its run a moment ago).
    @discardableResult
    public func fire(_ key: Key) -> Bool { apply(to: key) { $0.fire() } }

    /// Cancels everything (C8). Returns how many entries were cancelled.
    @discardableResult
    public func cancelAll() -> Int {
        let slots = state.withLock { state -> [Slot] in
            defer { state.slots = [:] }
            return Array(state.slots.values)
        }
        for slot in slots { slot.timer.invalidate() }
        return slots.count
    }

    /// Suspends everything (C9).
    public func suspendAll() { for timer in timers() { timer.suspend() } }

    /// Resumes everything (C9); missed deadlines follow each entry's policy (C5).
    public func resumeAll() { for timer in timers() { timer.resume() } }

    // MARK: Introspection

    /// Whether work is under `key`.
    public func contains(_ key: Key) -> Bool { state.withLock { $0.slots[key] != nil } }

    /// How many keys are live.
    public var count: Int { state.withLock { $0.slots.count } }

    /// The live keys, with their next deadline, interval and fire count, in no particular order.
    /// Cheap enough for a debugging screen: one lock to copy the table, then one per entry.
    public var entries: [Entry] {
        state.withLock { $0.slots.map { ($0.key, $0.value.timer) } }.map { key, timer in
            Entry(key: key, nextDeadline: timer.nextDeadline, interval: timer.interval, fireCount: timer.fireCount, isSuspended: timer.isSuspended)
        }
    }

    /// The entry under `key`, if any.
    public func entry(_ key: Key) -> Entry? {
        guard let timer = state.withLock({ $0.slots[key]?.timer }) else { return nil }
        return Entry(key: key, nextDeadline: timer.nextDeadline, interval: timer.interval, fireCount: timer.fireCount, isSuspended: timer.isSuspended)
    }

    // MARK: Helpers

    /// The timer under `key`, for the operations of a grid (a calendar entry has none: schedule it
    /// again to change it).
    private func timer(for key: Key) throws(TimerError) -> ScheduledTimer {
        guard let work = state.withLock({ $0.slots[key]?.timer }) else { throw .keyNotFound(String(describing: key)) }
        guard let timer = work as? ScheduledTimer else {
            throw .invalidCalendarRule("the work under \(key) follows a calendar schedule: schedule it again to move it")
        }
        return timer
    }

    private func apply(to key: Key, _ body: (any RegistryWork) -> Bool) -> Bool {
        guard let timer = state.withLock({ $0.slots[key]?.timer }) else { return false }
        return body(timer)
    }

    private func timers() -> [any RegistryWork] { state.withLock { $0.slots.values.map(\.timer) } }
}
