import Foundation
import TimerKit

extension DurableTimers {
    // MARK: Scheduling

    /// Schedules a one-shot at a calendar instant (a past one fires at once).
    ///
    /// - Returns: `false` if `ifExists` is ``DurableConflict/keep`` and the key holds a timer.
    /// - Throws: ``DurableTimerError/invalidDate(_:)`` for a date outside ``earliestDate`` ..<
    ///   ``latestDate`` (or NaN); ``DurableTimerError/invalidKey(_:)``,
    ///   ``DurableTimerError/unknownHandler(_:)``, ``DurableTimerError/payload(key:reason:)`` for a
    ///   payload that does not encode or is over ``maximumPayloadSize``,
    ///   ``DurableTimerError/keyInUse(_:)`` with ``DurableConflict/fail``, or a store failure
    ///   (nothing written).
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, at date: Date, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        try await put(
            key: key, handler: handler, payload: payload, recurrence: .none, misfire: misfire, due: DurableLimits.nanoseconds(of: date), conflict: ifExists)
    }

    /// Schedules a one-shot `delay` from now on the durable clock.
    ///
    /// - Throws: ``DurableTimerError/invalidDuration(_:)`` for a negative delay, or one that puts the
    ///   deadline on or after ``latestDate``; otherwise as ``schedule(key:at:handler:payload:misfire:ifExists:)``.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, after delay: Duration, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        try await put(key: key, handler: handler, payload: payload, recurrence: .none, misfire: misfire, due: deadline(after: delay), conflict: ifExists)
    }

    /// Schedules a timer that repeats every `interval` on a fixed grid: its k-th occurrence is
    /// `first + k·interval`, across restarts (C4). `first` defaults to one interval from now.
    ///
    /// - Throws: ``DurableTimerError/invalidDuration(_:)`` for an interval of zero or less, or one
    ///   longer than the range of dates; ``DurableTimerError/invalidDate(_:)`` for a `first` outside
    ///   the range; otherwise as ``schedule(key:at:handler:payload:misfire:ifExists:)``.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, every interval: Duration, first: Date? = nil, handler: String, payload: Payload, misfire: MisfirePolicy = .once,
        ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        guard interval > .zero, let nanoseconds = interval.exactNanoseconds, nanoseconds <= DurableLimits.latest else {
            throw .invalidDuration("an interval must be more than zero and at most the range of dates (\(Duration.nanoseconds(DurableLimits.latest)))")
        }
        let due: Int64
        if let first { due = try DurableLimits.nanoseconds(of: first) } else { due = try deadline(after: interval) }
        return try await put(key: key, handler: handler, payload: payload, recurrence: .interval(nanoseconds), misfire: misfire, due: due, conflict: ifExists)
    }

    /// Schedules a timer that follows a calendar rule ("daily at 09:00 in Europe/Berlin"), from its
    /// first occurrence after now.
    ///
    /// - Throws: ``DurableTimerError/invalidRule(_:)`` when the rule's time zone is unknown here (it
    ///   has no occurrence); otherwise as ``schedule(key:at:handler:payload:misfire:ifExists:)``.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, rule: CalendarRule, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        guard let due = OccurrencePlan.nextOccurrence(of: CalendarSchedule(rule), after: now()) else {
            throw .invalidRule("the time zone '\(rule.timeZoneIdentifier)' is unknown here")
        }
        guard DurableLimits.contains(due) else { throw .invalidDate("the rule's next occurrence is outside the range of dates") }
        return try await put(key: key, handler: handler, payload: payload, recurrence: .rule(rule), misfire: misfire, due: due, conflict: ifExists)
    }

    /// Schedules a timer that follows a cron expression, from its first occurrence after now:
    /// `"*/15 9-17 * * mon-fri"`, in `timeZone` or the zone of a `CRON_TZ=` prefix.
    ///
    /// ```swift
    /// try await timers.schedule(key: "report", cron: "0 7 * * mon", in: berlin, handler: "report", payload: Report())
    /// ```
    ///
    /// - Throws: ``DurableTimerError/invalidRule(_:)`` for an expression that does not read (the
    ///   reason names the field) or an unknown zone; otherwise as
    ///   ``schedule(key:at:handler:payload:misfire:ifExists:)``.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, cron: String, in timeZone: TimeZone = .current, handler: String, payload: Payload, misfire: MisfirePolicy = .once,
        ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        let schedule: CalendarSchedule
        do {
            schedule = try CalendarSchedule(cron: cron, in: timeZone)
        } catch {
            throw .invalidRule(error.description)
        }
        return try await self.schedule(key: key, schedule: schedule, handler: handler, payload: payload, misfire: misfire, ifExists: ifExists)
    }

    /// Schedules a timer that follows a calendar schedule — a cron expression or a calendar rule,
    /// with its bounds and jitter — from its first occurrence after now. The schedule is stored
    /// as its text, and every instance follows it the same way, jitter included.
    ///
    /// - Throws: ``DurableTimerError/invalidRule(_:)`` when the schedule's zone is unknown here or
    ///   it has no occurrence after now (it has ended); otherwise as
    ///   ``schedule(key:at:handler:payload:misfire:ifExists:)``.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, schedule: CalendarSchedule, handler: String, payload: Payload, misfire: MisfirePolicy = .once,
        ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        guard schedule.timeZone != nil else { throw .invalidRule("the time zone '\(schedule.timeZoneIdentifier)' is unknown here") }
        guard let due = OccurrencePlan.nextOccurrence(of: schedule, after: now()) else {
            throw .invalidRule("the schedule (\(schedule)) has no occurrence after now: it has ended")
        }
        guard DurableLimits.contains(due) else { throw .invalidDate("the schedule's next occurrence is outside the range of dates") }
        return try await put(key: key, handler: handler, payload: payload, recurrence: .schedule(schedule), misfire: misfire, due: due, conflict: ifExists)
    }

    /// Schedules many one-shots for one handler in one transaction: the fast way to store thousands
    /// (each as ``schedule(key:at:handler:payload:misfire:ifExists:)`` would; one bad entry refuses
    /// the whole batch, and nothing is written).
    ///
    /// A key given twice is one timer: under ``DurableConflict/replace`` its last entry is
    /// stored, under ``DurableConflict/keep`` its first; under ``DurableConflict/fail`` the batch
    /// is refused with ``DurableTimerError/keyInUse(_:)``. Every store answers alike.
    ///
    /// - Returns: How many were stored (fewer than given under ``DurableConflict/keep``, or when a
    ///   key was given twice).
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        _ timers: [(key: String, at: Date, payload: Payload)], handler: String, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Int {
        try validate(misfire)
        try requireRegistered(handler)
        let encoder = JSONEncoder()
        var records: [DurableTimerRecord] = []
        records.reserveCapacity(timers.count)
        for timer in timers {
            try DurableLimits.validate(key: timer.key)
            records.append(
                DurableTimerRecord(
                    namespace: namespace, key: timer.key, handler: handler, payload: try Self.encode(timer.payload, key: timer.key, encoder),
                    recurrence: .none, misfire: misfire, due: try DurableLimits.nanoseconds(of: timer.at)))
        }
        records = try Self.oneEntryPerKey(records, ifExists)
        let stored = try await traced(records) { records throws(DurableTimerError) in try await store.putAll(records, conflict: ifExists) }
        learn { machine in
            records.flatMap { machine.load(StoredKey($0.key), readyAt: $0.readyAt, handler: $0.handler) }
        }
        return stored
    }

    // MARK: Changing and removing

    /// What ``cancel(key:)`` found.
    public enum CancelOutcome: Sendable, Hashable {
        /// The timer was waiting (or parked): it is removed and will not run.
        case cancelled
        /// A runner held a live claim on it — this one or another instance of the fleet: its
        /// handler was running, or about to start. The timer is removed; the handler's task is
        /// cancelled (cooperatively: at once here and, for PostgreSQL, on the instance that runs it
        /// as soon as it hears; at its next renewal otherwise), and the run's end changes nothing.
        case cancelledWhileRunning
        /// No timer is stored under the key.
        case notFound
    }

    /// Removes the timer under `key`, and cancels its handler if it is running (see
    /// ``CancelOutcome``).
    @discardableResult
    public func cancel(key: String) async throws(DurableTimerError) -> CancelOutcome {
        guard DurableLimits.isValid(key: key) else { return .notFound }
        let removal = try await store.delete(namespace: namespace, key: key, now: now())
        learn { $0.removed(StoredKey(key)) }
        guard let removal else { return .notFound }
        return removal.wasClaimed ? .cancelledWhileRunning : .cancelled
    }

    /// Moves the timer's next occurrence to `date` (a repeating timer's grid restarts there, C10).
    /// A parked timer is scheduled again.
    ///
    /// - Throws: ``DurableTimerError/invalidDate(_:)`` for a date outside the range;
    ///   ``DurableTimerError/notFound(_:)`` when no timer is stored under the key, or it is running
    ///   (moving it under its handler would race its completion).
    public func reschedule(key: String, at date: Date) async throws(DurableTimerError) {
        let due = try DurableLimits.nanoseconds(of: date)
        guard DurableLimits.isValid(key: key) else { throw .notFound(key) }
        guard let record = try await store.move(namespace: namespace, key: key, due: due, readyAt: due, ifSequence: nil) else { throw .notFound(key) }
        learn { $0.load(StoredKey(key), readyAt: record.readyAt, handler: record.handler) }
    }

    /// Moves the timer's next occurrence `delay` later (earlier, for a negative one).
    ///
    /// - Throws: ``DurableTimerError/invalidDuration(_:)`` when the moved deadline leaves the range
    ///   of dates; otherwise as ``reschedule(key:at:)``.
    public func postpone(key: String, by delay: Duration) async throws(DurableTimerError) {
        guard let nanoseconds = delay.exactNanoseconds else { throw .invalidDuration("the delay does not fit in 64-bit nanoseconds") }
        try await move(key: key) { record throws(DurableTimerError) in
            let due = record.due.addingSaturating(nanoseconds)
            guard DurableLimits.contains(due) else { throw .invalidDuration("postponed by \(delay), the deadline leaves the range of dates") }
            return due
        }
    }

    /// Schedules a parked (failed) timer again at its occurrence, with its attempts cleared.
    ///
    /// - Throws: ``DurableTimerError/notFound(_:)`` when no timer is stored under the key, or it
    ///   is running; ``DurableTimerError/invalidDate(_:)`` when its stored deadline is outside the
    ///   range of dates.
    public func retry(key: String) async throws(DurableTimerError) {
        try await move(key: key) { record throws(DurableTimerError) in
            guard DurableLimits.contains(record.due) else {
                throw .invalidDate("its deadline is outside the range of dates: reschedule(key:at:) it to a date in the range")
            }
            return record.due
        }
    }

    /// Moves the occurrence it reads to the deadline `moved` gives for it, if that occurrence is
    /// still stored when the move is written. An occurrence that ended meanwhile (a repeating
    /// timer advanced) or another move makes it read again, so two postpones add both delays
    /// and a finished occurrence is never moved back to run again.
    private func move(key: String, _ moved: (DurableTimerRecord) throws(DurableTimerError) -> Int64) async throws(DurableTimerError) {
        guard DurableLimits.isValid(key: key) else { throw .notFound(key) }
        for _ in 0..<Self.moveAttempts {
            // A timer a runner holds is not moved (that would race its completion), as reschedule.
            guard let record = try await store.record(namespace: namespace, key: key), record.owner == nil else { throw .notFound(key) }
            let due = try moved(record)
            if let stored = try await store.move(namespace: namespace, key: key, due: due, readyAt: due, ifSequence: record.sequence) {
                learn { $0.load(StoredKey(key), readyAt: stored.readyAt, handler: stored.handler) }
                return
            }
        }
        throw .store(reason: "the timer '\(key)' changed \(Self.moveAttempts) times while it was being moved: try again")
    }

    /// How often a fenced move reads again before it gives up: each conflict is another caller's
    /// move that was written, so this bounds contention, never a spin.
    private static let moveAttempts = 100

    /// Runs the timer's handler now, standing for no occurrence (C7): a one-shot then ends; a
    /// repeating timer keeps its next occurrence. Returns at once; the run is claimed like any other.
    ///
    /// - Returns: `false` if no timer is stored under the key, its handler is not registered, the
    ///   runner is not running, or the timer is being claimed or run here already.
    @discardableResult
    public func fire(key: String) async throws(DurableTimerError) -> Bool {
        guard DurableLimits.isValid(key: key), let record = try await store.record(namespace: namespace, key: key), runner.handler(record.handler) != nil
        else { return false }
        return runner.decide { machine, _ in machine.fireManually(StoredKey(key)) }
    }

    // MARK: Plumbing

    /// `records` with one entry per key, as ``DurableConflict`` reads a key given twice: the last
    /// replaces, the first is kept, or the batch fails. (PostgreSQL refuses a statement that
    /// updates one row twice; SQLite took the entries in turn.)
    static func oneEntryPerKey(_ records: [DurableTimerRecord], _ conflict: DurableConflict) throws(DurableTimerError) -> [DurableTimerRecord] {
        var index: [String: Int] = [:]
        index.reserveCapacity(records.count)
        var unique: [DurableTimerRecord] = []
        unique.reserveCapacity(records.count)
        for record in records {
            guard let earlier = index[record.key] else {
                index[record.key] = unique.count
                unique.append(record)
                continue
            }
            switch conflict {
            case .replace: unique[earlier] = record
            case .keep: break
            case .fail: throw .keyInUse(record.key)
            }
        }
        return unique
    }

    /// Now plus `delay`, checked against the range of dates.
    func deadline(after delay: Duration) throws(DurableTimerError) -> Int64 {
        guard delay >= .zero, let nanoseconds = delay.exactNanoseconds else {
            throw .invalidDuration("a delay must be zero or more and fit in 64-bit nanoseconds")
        }
        let due = now().addingSaturating(nanoseconds)
        guard DurableLimits.contains(due) else { throw .invalidDuration("\(delay) from now is past \(DurableTimers.latestDate)") }
        return due
    }

    private func put<Payload: Codable & Sendable>(
        key: String, handler: String, payload: Payload, recurrence: DurableTimerRecord.Recurrence, misfire: MisfirePolicy, due: Int64, conflict: DurableConflict
    ) async throws(DurableTimerError) -> Bool {
        let record = try record(key: key, handler: handler, payload: payload, recurrence: recurrence, misfire: misfire, due: due)
        guard try await traced([record], { records throws(DurableTimerError) in try await store.put(records[0], conflict: conflict) }) else { return false }
        learn { $0.load(StoredKey(key), readyAt: record.readyAt, handler: handler) }
        return true
    }

    /// The row a schedule writes, its parts checked.
    func record<Payload: Codable & Sendable>(
        key: String, handler: String, payload: Payload, recurrence: DurableTimerRecord.Recurrence, misfire: MisfirePolicy, due: Int64
    ) throws(DurableTimerError) -> DurableTimerRecord {
        try DurableLimits.validate(key: key)
        try validate(misfire)
        try requireRegistered(handler)
        return DurableTimerRecord(
            namespace: namespace, key: key, handler: handler, payload: try Self.encode(payload, key: key, JSONEncoder()), recurrence: recurrence,
            misfire: misfire, due: due)
    }

    /// Tells the runner what this instance just wrote: at once, unless the write belongs to the
    /// application's transaction (``DurableTransactionScope``), which may still roll back — its
    /// commit's notification then tells every instance, this one included.
    func learn(_ change: (inout RunnerStateMachine) -> [RunnerStateMachine.Action]) {
        guard DurableTransactionScope.connection(for: store as AnyObject) == nil else { return }
        runner.transition(change)
    }

    private func requireRegistered(_ handler: String) throws(DurableTimerError) {
        guard runner.handler(handler) != nil else { throw .unknownHandler(handler) }
    }

    private func validate(_ misfire: MisfirePolicy) throws(DurableTimerError) {
        switch misfire {
        case .all(let max) where max < 1: throw .invalidDuration("all(max:) needs a limit of at least 1")
        case .within(let window) where window < .zero: throw .invalidDuration("within(_:) needs a window of zero or more")
        default: break
        }
    }

    private static func encode<Payload: Encodable>(_ payload: Payload, key: String, _ encoder: JSONEncoder) throws(DurableTimerError) -> Data {
        let data: Data
        do {
            data = try encoder.encode(payload)
        } catch {
            throw .payload(key: key, reason: "\(error)")
        }
        guard data.count <= DurableTimers.maximumPayloadSize else {
            throw .payload(key: key, reason: "its JSON is \(data.count) bytes, over the limit of \(DurableTimers.maximumPayloadSize)")
        }
        return data
    }
}
