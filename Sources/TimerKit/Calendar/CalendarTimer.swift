import Foundation

/// A timer that runs work at the occurrences of a ``CalendarSchedule``: "*/15 9-17 * * mon-fri"
/// in Europe/Berlin, or every weekday at 09:30.
///
/// It follows the wall clock (C1): set forward past an occurrence, the run happens at once; set
/// back, it waits until the clock reads the occurrence again. Each occurrence is a one-shot on
/// the engine, armed when the run before it has returned, so runs never overlap (C14); an
/// occurrence that came while a run was going, or while the machine slept, gets no run of its own
/// — the next run stands for the latest and counts the others (``CalendarFire/skippedOccurrences``,
/// C5). Like every timer it runs whether or not you keep the handle (C12), until it is invalidated
/// or the schedule ends; it holds its handler only until then (C11: bind an owner with
/// ``TimerHandler`` to hold it weakly).
///
/// ```swift
/// let berlin = TimeZone(identifier: "Europe/Berlin")!
/// let sync = try CalendarTimer.schedule(try CalendarSchedule(cron: "*/15 9-17 * * mon-fri", in: berlin)) { _, fire in
///     print("sync for \(fire.occurrence)")
/// }
/// ```
///
/// On a virtual clock (`TimerKitTesting`'s `VirtualClock`) the clock's instants are read as
/// nanoseconds since 1970, so calendar code is tested exactly.
public final class CalendarTimer: Sendable {
    /// The schedule it follows.
    public let schedule: CalendarSchedule
    /// The clock its occurrences are armed on: the wall clock, or a virtual one.
    public let clock: TimerClock
    let delivery: TimerDelivery
    private let state: Locked<State>

    struct State {
        var handler: (@Sendable (CalendarTimer, CalendarFire) -> Void)?
        /// Called once when the timer ends.
        var onEnd: (@Sendable () -> Void)?
        /// The one-shot of the next occurrence.
        var pending: ScheduledTimer?
        var nextOccurrence: Date?
        var fireCount = 0
        var isSuspended = false
        /// Counts changes of `isSuspended` and `pending`: the one-shot's suspension is brought in
        /// line with `isSuspended` until no change came meanwhile.
        var version: UInt64 = 0
        /// Whether a run is under way: runs never overlap (C14); one asked for meanwhile waits here.
        var running = false
        var waiting: [CalendarFire] = []
    }

    /// Starts a timer that runs `handler` at each occurrence of `schedule` after now.
    ///
    /// - Parameters:
    ///   - schedule: The calendar schedule.
    ///   - clock: The wall clock (the default), or a virtual clock for tests; a calendar follows
    ///     dates, so the other clocks are refused.
    ///   - delivery: Where the handler runs (C15); the engine thread by default.
    ///   - handler: Called with the timer and the run.
    /// - Throws: ``TimerError/clockMismatch(expected:got:)`` for a clock that is neither the wall
    ///   clock nor virtual; ``TimerError/clockShutDown``.
    @discardableResult
    public static func schedule(
        _ schedule: CalendarSchedule, clock: TimerClock = .wall, delivery: TimerDelivery = .engineThread,
        _ handler: @escaping @Sendable (CalendarTimer, CalendarFire) -> Void
    ) throws(TimerError) -> CalendarTimer {
        try make(schedule, clock: clock, delivery: delivery, suspended: false, onEnd: nil, handler)
    }

    /// A timer, suspended if asked (a registry resumes it once it is in its table), calling
    /// `onEnd` once when it ends — invalidated, or its schedule over.
    static func make(
        _ schedule: CalendarSchedule, clock: TimerClock, delivery: TimerDelivery, suspended: Bool, onEnd: (@Sendable () -> Void)?,
        _ handler: @escaping @Sendable (CalendarTimer, CalendarFire) -> Void
    ) throws(TimerError) -> CalendarTimer {
        guard clock.kind == .wall || clock.kind == .virtual else { throw .clockMismatch(expected: .wall, got: clock.kind) }
        let timer = CalendarTimer(schedule: schedule, clock: clock, delivery: delivery, handler: handler)
        timer.state.withLock {
            $0.isSuspended = suspended
            $0.onEnd = onEnd
        }
        try timer.arm(after: timer.now())
        return timer
    }

    /// Starts a timer whose handler is a ``TimerHandler``: bound to an owner held weakly (C11), on
    /// the main actor (C15), or both. Once the owner is gone the timer ends at its next occurrence
    /// without calling the handler.
    @discardableResult
    public static func schedule(
        _ schedule: CalendarSchedule, clock: TimerClock = .wall, delivery: TimerDelivery? = nil, _ handler: TimerHandler<CalendarTimer, CalendarFire>
    ) throws(TimerError) -> CalendarTimer {
        try self.schedule(
            schedule, clock: clock, delivery: try handler.delivery(delivery, otherwise: .engineThread), handler.closure(endingWith: { $0.invalidate() }))
    }

    private init(schedule: CalendarSchedule, clock: TimerClock, delivery: TimerDelivery, handler: @escaping @Sendable (CalendarTimer, CalendarFire) -> Void) {
        self.schedule = schedule
        self.clock = clock
        self.delivery = delivery
        self.state = Locked(State(handler: handler))
    }

    /// The clock's reading as a date (a virtual clock's nanoseconds count from 1970).
    func now() -> Date { Date(timeIntervalSince1970: Double(clock.now.nanoseconds) / 1e9) }

    /// The next occurrence it waits for; `nil` once it is invalid or the schedule has ended.
    public var nextOccurrence: Date? { state.withLock { $0.handler == nil ? nil : $0.nextOccurrence } }

    /// Whether it will run again: not invalidated, and the schedule has not ended.
    public var isValid: Bool { state.withLock { $0.handler != nil } }

    /// Runs so far (manual ones included).
    public var fireCount: Int { state.withLock { $0.fireCount } }

    /// Whether it is suspended.
    public var isSuspended: Bool { state.withLock { $0.isSuspended } }

    /// Whether a run is under way.
    var isRunUnderWay: Bool { state.withLock { $0.running } }

    /// Ends the timer (C8): once this returns no new run begins, and the handler is released.
    public func invalidate() {
        // The handler is released outside the lock: what it holds may call back in as it goes.
        let (pending, onEnd, handler) = state.withLock { state in
            defer { (state.pending, state.onEnd, state.handler, state.nextOccurrence) = (nil, nil, nil, nil) }
            return (state.pending, state.onEnd, state.handler)
        }
        pending?.invalidate()
        onEnd?()
        withExtendedLifetime(handler) {}
    }

    /// Holds the runs (C9): occurrences that come meanwhile are counted, and at ``resume()`` the
    /// latest of them runs at once. A suspended timer waits for `resume()` whether or not its
    /// handle is kept: keep the handle of a timer you suspend, or invalidate it.
    ///
    /// - Returns: Whether this call suspended it.
    @discardableResult
    public func suspend() -> Bool { setSuspended(true) }

    /// Resumes a suspended timer (C9): if occurrences came meanwhile, the latest runs at once.
    ///
    /// - Returns: Whether this call resumed it.
    @discardableResult
    public func resume() -> Bool { setSuspended(false) }

    private func setSuspended(_ suspended: Bool) -> Bool {
        let changed = state.withLock { state -> Bool in
            guard state.handler != nil, state.isSuspended != suspended else { return false }
            state.isSuspended = suspended
            state.version &+= 1
            return true
        }
        if changed { applySuspension() }
        return changed
    }

    /// Suspends or resumes the pending one-shot as the state says, again if a change came while
    /// it did: concurrent suspend(), resume() and arming end with the one-shot as the state.
    private func applySuspension() {
        while true {
            let (timer, suspended, version) = state.withLock { ($0.pending, $0.isSuspended, $0.version) }
            if suspended { timer?.suspend() } else { timer?.resume() }
            if state.withLock({ $0.version == version }) { return }
        }
    }

    /// Runs the handler now, on the timer's delivery, soon after this returns (C7); the next
    /// occurrence stays as it was. If a run is under way, this one follows it (C14).
    ///
    /// - Returns: Whether a run was requested: `false` once the timer is invalid.
    @discardableResult
    public func fire() -> Bool {
        guard isValid else { return false }
        do {
            try ScheduledTimer.once(at: .now, clock: clock, delivery: delivery) { [self] _, _ in
                let now = self.now()
                _ = run(CalendarFire(occurrence: now, firedAt: now, skippedOccurrences: 0, sequenceNumber: 0, isManual: true))
            }
            return true
        } catch {
            return false
        }
    }

    // MARK: Occurrences

    /// Arms the one-shot of the first occurrence after `date`; ends the timer if there is none.
    private func arm(after date: Date) throws(TimerError) {
        guard let next = schedule.nextOccurrence(after: date) else { return invalidate() }
        try arm(next)
    }

    /// Arms the one-shot of `occurrence` (made suspended, installed, then brought in line with the
    /// timer's suspension).
    private func arm(_ occurrence: Date) throws(TimerError) {
        let start: TimerStart =
            clock.kind == .virtual ? .at(TimerInstant(kind: .virtual, nanoseconds: TimerInstant(occurrence).nanoseconds)) : .date(occurrence)
        let timer = try ScheduledTimer.make(
            interval: nil, first: start, tolerance: .zero, clock: clock, policy: .coalesce, delivery: delivery, suspended: true
        ) { [self] _, _ in occurrenceCame(occurrence) }
        let installed = state.withLock { state -> Bool in
            guard state.handler != nil else { return false }
            state.pending = timer
            state.nextOccurrence = occurrence
            state.version &+= 1
            return true
        }
        guard installed else { return timer.invalidate() }
        applySuspension()
    }

    /// The one-shot of `occurrence` fired: run for the latest occurrence that has come, counting
    /// the others, then arm the next. Suspended meanwhile, the occurrence waits for resume().
    private func occurrenceCame(_ occurrence: Date) {
        let now = self.now()
        let (latest, skipped) = schedule.catchUp(from: occurrence, to: now)
        let fire = CalendarFire(occurrence: latest, firedAt: now, skippedOccurrences: skipped, sequenceNumber: 0, isManual: false)
        do {
            switch run(fire) {
            case .suspended: try arm(occurrence)
            case .ended: return
            case .ran: try arm(after: latest)
            }
        } catch {
            invalidate()
        }
    }

    enum RunOutcome { case ran, suspended, ended }

    /// Runs the handler for `fire`, numbered, unless the timer is invalid, or suspended (for an
    /// occurrence's run). A run asked for while one is under way follows it, on the thread of the
    /// run under way (C14).
    private func run(_ fire: CalendarFire) -> RunOutcome {
        typealias Handler = @Sendable (CalendarTimer, CalendarFire) -> Void
        var next = state.withLock { state -> Result<(Handler, CalendarFire), RunOutcomeError> in
            guard let handler = state.handler else { return .failure(.ended) }
            if !fire.isManual && state.isSuspended { return .failure(.suspended) }
            if state.running {
                state.waiting.append(fire)
                return .failure(.waiting)
            }
            state.running = true
            state.fireCount += 1
            return .success((handler, fire.numbered(state.fireCount)))
        }
        switch next {
        case .failure(.ended): return .ended
        case .failure(.suspended): return .suspended
        case .failure(.waiting): return .ran
        case .success: break
        }
        while case .success(let (handler, numbered)) = next {
            handler(self, numbered)
            next = state.withLock { state in
                guard let handler = state.handler, !state.waiting.isEmpty else {
                    state.running = false
                    state.waiting = []
                    return .failure(.ended)
                }
                state.fireCount += 1
                return .success((handler, state.waiting.removeFirst().numbered(state.fireCount)))
            }
        }
        return .ran
    }

    enum RunOutcomeError: Error { case ended, suspended, waiting }
}

extension CalendarFire {
    func numbered(_ sequenceNumber: Int) -> CalendarFire {
        CalendarFire(
            occurrence: occurrence, firedAt: firedAt, skippedOccurrences: skippedOccurrences, sequenceNumber: sequenceNumber, isManual: isManual)
    }
}
