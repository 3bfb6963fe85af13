import Foundation
import TimerKit

/// Timers that survive a restart: stored in a SQLite file, run by name, at least once.
///
/// ```swift
/// struct SaleEnd: Codable, Sendable { var sale: String }
///
/// let timers = try DurableTimers(path: "timers.sqlite")
/// try await timers.register("sale.end", payload: SaleEnd.self) { payload, fire in
///     try await closeSale(payload.sale, idempotencyKey: fire.idempotencyKey)
/// }
/// try await timers.schedule(key: "sale/42", at: eightPM, handler: "sale.end", payload: SaleEnd(sale: "42"))
/// try await timers.run()  // until the task is cancelled
/// ```
///
/// - **Handlers by name.** A timer stores the name of its handler and a `Codable` payload, never a
///   closure; after a restart, ``register(_:payload:_:)`` binds the name again. A timer whose
///   handler is not registered waits untouched (``orphans(limit:)``); one whose payload does not decode as
///   the registered type is parked as failed, never run with a wrong value.
/// - **No polling.** The runner loads the timers due within its horizon into TimerKit's engine as
///   wall-clock one-shots and loads again before the horizon runs out; a timer scheduled here
///   inside the horizon is armed at once. A handler starts within the engine's wake-up latency of
///   its deadline, not a poll interval later.
/// - **At least once, never lost.** Firing claims the timer with a lease; the handler runs; then
///   the timer is removed (a one-shot) or moved to its next occurrence, fenced by the occurrence's
///   sequence number. A crash mid-handler runs it again once the lease expires, with
///   ``DurableFire/attempt`` 2 and the same ``DurableFire/idempotencyKey``. A handler that throws is
///   retried with a growing delay, then parked as failed with its error.
/// - **Time** is the wall clock, as nanoseconds since 1970 (UTC): monotonic clocks restart at boot.
///   See the "Durable timers" article for what a step of the host clock does.
public final class DurableTimers: Sendable {
    /// The namespace this runner's keys live in: runners of different namespaces share a file
    /// without seeing each other's timers.
    public let namespace: String
    /// The clock deadlines are read on: `TimerClock.wall`, or a virtual clock in tests.
    public let clock: TimerClock
    /// How the runner loads, claims, retries and spreads.
    public let options: Options

    let store: any DurableTimerStore
    /// This runner's id in the leases it takes.
    let owner = UUID().uuidString
    let runner: Runner

    /// Opens (or creates) the SQLite file at `path` and makes a runner for the timers of
    /// `namespace` in it. Call ``run()`` (or ``start()``) to fire them.
    ///
    /// - Throws: ``DurableTimerError/cannotOpen(path:reason:)`` when the file cannot be opened or
    ///   created, ``DurableTimerError/corrupt(path:reason:)`` when it is not a database,
    ///   ``DurableTimerError/notACalendarClock(_:)`` for a continuous or suspending clock,
    ///   ``DurableTimerError/invalidKey(_:)`` for an empty namespace.
    public convenience init(path: String, namespace: String = "default", clock: TimerClock = .wall, options: Options = Options()) throws(DurableTimerError) {
        let store = try SQLiteTimerStore(path: path, busyTimeout: options.busyTimeout, durability: options.durability)
        try self.init(store: store, namespace: namespace, clock: clock, options: options)
    }

    /// Makes a runner on any store (the package's PostgreSQL store uses it).
    package init(store: any DurableTimerStore, namespace: String, clock: TimerClock, options: Options) throws(DurableTimerError) {
        guard clock.kind == .wall || clock.kind == .virtual else { throw .notACalendarClock("\(clock.kind)") }
        try Self.validate(key: namespace)
        guard options.maxAttempts >= 1, options.maxConcurrentHandlers >= 1, options.catchUpRate >= 1 else {
            throw .invalidDuration("maxAttempts, maxConcurrentHandlers and catchUpRate must be at least 1")
        }
        for (name, value) in [("horizon", options.horizon), ("lease", options.lease), ("retryDelay", options.retryDelay)] where value <= .zero {
            throw .invalidDuration("\(name) must be more than zero")
        }
        self.store = store
        self.namespace = namespace
        self.clock = clock
        self.options = options
        self.runner = Runner(options: options)
    }

    deinit {
        runner.stop()
    }

    // MARK: Handlers

    /// Binds `name` to a handler for payloads of `payload`'s type. Timers stored for the name fire
    /// once it is registered (also those that waited as orphans).
    ///
    /// The handler may run more than once for one occurrence (at-least-once): use
    /// ``DurableFire/idempotencyKey`` for side effects outside the store. When it throws, the
    /// occurrence is retried (``Options/maxAttempts``).
    ///
    /// - Throws: ``DurableTimerError/handlerAlreadyRegistered(_:)``, ``DurableTimerError/invalidKey(_:)``.
    public func register<Payload: Codable & Sendable>(
        _ name: String, payload: Payload.Type, _ handler: @escaping @Sendable (Payload, DurableFire) async throws -> Void
    ) async throws(DurableTimerError) {
        try Self.validate(key: name)
        let erased: Runner.Handler = { data, fire in
            let payload: Payload
            do {
                payload = try JSONDecoder().decode(Payload.self, from: data)
            } catch {
                throw Runner.PayloadDecodingFailed(reason: "\(error)")
            }
            try await handler(payload, fire)
        }
        try runner.register(name, erased)
        if runner.isStarted { await refill() }
    }

    // MARK: Scheduling

    /// Schedules a one-shot at a calendar instant.
    ///
    /// - Returns: `false` if `ifExists` is ``DurableConflict/keep`` and the key holds a timer.
    /// - Throws: ``DurableTimerError`` for an unknown handler, a bad key, a payload that does not
    ///   encode, a key in use with ``DurableConflict/fail``, or a store failure (nothing written).
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, at date: Date, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        try await put(key: key, handler: handler, payload: payload, recurrence: .none, misfire: misfire, due: date.nanosecondsSince1970, conflict: ifExists)
    }

    /// Schedules a one-shot `delay` from now on the durable clock.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, after delay: Duration, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        guard delay >= .zero, let nanoseconds = delay.exactNanoseconds else {
            throw .invalidDuration("a delay must be zero or more and fit in 64-bit nanoseconds")
        }
        return try await put(
            key: key, handler: handler, payload: payload, recurrence: .none, misfire: misfire, due: now().addingSaturating(nanoseconds), conflict: ifExists)
    }

    /// Schedules a timer that repeats every `interval` on a fixed grid: its k-th occurrence is
    /// `first + k·interval`, across restarts (C4). `first` defaults to one interval from now.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, every interval: Duration, first: Date? = nil, handler: String, payload: Payload, misfire: MisfirePolicy = .once,
        ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        guard interval > .zero, let nanoseconds = interval.exactNanoseconds else {
            throw .invalidDuration("an interval must be more than zero and fit in 64-bit nanoseconds")
        }
        let due = first?.nanosecondsSince1970 ?? now().addingSaturating(nanoseconds)
        return try await put(key: key, handler: handler, payload: payload, recurrence: .interval(nanoseconds), misfire: misfire, due: due, conflict: ifExists)
    }

    /// Schedules a timer that follows a calendar rule ("daily at 09:00 in Europe/Berlin"), from its
    /// first occurrence after now.
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        key: String, rule: CalendarRule, handler: String, payload: Payload, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Bool {
        guard let due = OccurrencePlan.nextOccurrence(of: rule, after: now()) else {
            throw .invalidRule("the time zone '\(rule.timeZoneIdentifier)' is unknown here")
        }
        return try await put(key: key, handler: handler, payload: payload, recurrence: .rule(rule), misfire: misfire, due: due, conflict: ifExists)
    }

    /// Schedules many one-shots for one handler in one transaction: the fast way to store thousands
    /// (each as ``schedule(key:at:handler:payload:misfire:ifExists:)`` would).
    ///
    /// - Returns: How many were stored (fewer than given under ``DurableConflict/keep``).
    @discardableResult
    public func schedule<Payload: Codable & Sendable>(
        _ timers: [(key: String, at: Date, payload: Payload)], handler: String, misfire: MisfirePolicy = .once, ifExists: DurableConflict = .replace
    ) async throws(DurableTimerError) -> Int {
        try validate(misfire)
        let encoder = JSONEncoder()
        var records: [DurableTimerRecord] = []
        records.reserveCapacity(timers.count)
        for timer in timers {
            try Self.validate(key: timer.key)
            records.append(
                DurableTimerRecord(
                    namespace: namespace, key: timer.key, handler: handler, payload: try Self.encode(timer.payload, key: timer.key, encoder),
                    recurrence: .none, misfire: misfire, due: timer.at.nanosecondsSince1970))
        }
        try requireRegistered(handler)
        let stored = try await store.putAll(records, conflict: ifExists)
        for record in records { runner.armIfLoaded(record, timers: self) }
        return stored
    }

    // MARK: Changing and removing

    /// What ``cancel(key:)`` found.
    public enum CancelOutcome: Sendable, Hashable {
        /// The timer was waiting (or parked): it is removed and will not run.
        case cancelled
        /// Its handler is running in this process: the run finishes, the timer is removed and its
        /// completion changes nothing.
        case cancelledWhileRunning
        /// No timer is stored under the key.
        case notFound
    }

    /// Removes the timer under `key`.
    @discardableResult
    public func cancel(key: String) async throws(DurableTimerError) -> CancelOutcome {
        runner.disarm(key)
        guard try await store.delete(namespace: namespace, key: key) != nil else { return .notFound }
        return runner.isRunning(key) ? .cancelledWhileRunning : .cancelled
    }

    /// Moves the timer's next occurrence to `date` (a repeating timer's grid restarts there, C10).
    /// A parked timer is scheduled again.
    ///
    /// - Throws: ``DurableTimerError/notFound(_:)`` when no timer is stored under the key, or it is
    ///   running (moving it under its handler would race its completion).
    public func reschedule(key: String, at date: Date) async throws(DurableTimerError) {
        let due = date.nanosecondsSince1970
        guard let record = try await store.move(namespace: namespace, key: key, due: due, readyAt: due) else { throw .notFound(key) }
        runner.disarm(key)
        runner.armIfLoaded(record, timers: self)
    }

    /// Moves the timer's next occurrence `delay` later.
    public func postpone(key: String, by delay: Duration) async throws(DurableTimerError) {
        guard let nanoseconds = delay.exactNanoseconds else { throw .invalidDuration("the delay does not fit in 64-bit nanoseconds") }
        guard let record = try await store.record(namespace: namespace, key: key) else { throw .notFound(key) }
        try await reschedule(key: key, at: Date(nanosecondsSince1970: record.due.addingSaturating(nanoseconds)))
    }

    /// Schedules a parked (failed) timer again at its occurrence, with its attempts cleared.
    public func retry(key: String) async throws(DurableTimerError) {
        guard let record = try await store.record(namespace: namespace, key: key) else { throw .notFound(key) }
        try await reschedule(key: key, at: Date(nanosecondsSince1970: record.due))
    }

    /// Runs the timer's handler now, standing for no occurrence (C7): a one-shot then ends; a
    /// repeating timer keeps its next occurrence. Returns at once; the run is claimed like any other.
    ///
    /// - Returns: `false` if no timer is stored under the key, or its handler is not registered.
    @discardableResult
    public func fire(key: String) async throws(DurableTimerError) -> Bool {
        guard let record = try await store.record(namespace: namespace, key: key), runner.handler(record.handler) != nil else { return false }
        runner.startManualRun(key, timers: self)
        return true
    }

    // MARK: Inspecting

    /// The timer under `key`, or `nil`.
    public func timer(key: String) async throws(DurableTimerError) -> DurableTimerInfo? {
        try await store.record(namespace: namespace, key: key).map(info)
    }

    /// The namespace's timers in the order they come due, at most `limit`.
    public func timers(limit: Int = 1_000) async throws(DurableTimerError) -> [DurableTimerInfo] {
        try await store.records(namespace: namespace, after: nil, limit: limit).map(info)
    }

    /// The timers whose handler is not registered with this runner: they wait, untouched, until it
    /// is (a renamed handler, or a runner that has not registered it yet).
    public func orphans(limit: Int = 1_000) async throws(DurableTimerError) -> [DurableTimerInfo] {
        try await store.orphans(namespace: namespace, handlers: runner.handlerNames, limit: limit).map(info)
    }

    /// How many timers the namespace holds.
    public func count() async throws(DurableTimerError) -> Int { try await store.count(namespace: namespace) }

    /// Occurrences that came due in this runner and wait for their claim or for a free handler slot
    /// (``Options/maxConcurrentHandlers``): the backlog of a runner that falls behind.
    public var waitingRuns: Int { runner.waitingRuns }

    /// Handlers running in this runner now.
    public var runningHandlers: Int { runner.runningHandlers }

    // MARK: Running

    /// Loads the timers due within the horizon and fires them as they come due, until
    /// ``shutdown()``. Idempotent.
    public func start() async {
        guard runner.markStarted() else { return }
        if let changes = store.changes(namespace: namespace) { runner.follow(changes, timers: self) }
        await refill()
    }

    /// Starts the runner and returns when the calling task is cancelled, after a graceful shutdown:
    /// no new fire starts, and the handlers under way finish.
    public func run() async {
        await start()
        await withTaskCancellationHandler {
            await runner.waitUntilStopped()
        } onCancel: {
            runner.stop()
        }
        await shutdown()
    }

    /// Stops firing: nothing new starts; returns once the handlers under way have finished and
    /// completed their timers. Idempotent.
    public func shutdown() async {
        runner.stop()
        await runner.waitForRunsToEnd()
    }

    // MARK: Plumbing

    /// The durable clock's reading, in nanoseconds since 1970.
    func now() -> Int64 { clock.now.nanoseconds.addingSaturating(store.hostSkew).addingSaturating(store.clockOffset) }

    private func put<Payload: Codable & Sendable>(
        key: String, handler: String, payload: Payload, recurrence: DurableTimerRecord.Recurrence, misfire: MisfirePolicy, due: Int64, conflict: DurableConflict
    ) async throws(DurableTimerError) -> Bool {
        try Self.validate(key: key)
        try validate(misfire)
        try requireRegistered(handler)
        let record = DurableTimerRecord(
            namespace: namespace, key: key, handler: handler, payload: try Self.encode(payload, key: key, JSONEncoder()), recurrence: recurrence,
            misfire: misfire,
            due: due)
        guard try await store.put(record, conflict: conflict) else { return false }
        runner.disarm(key)
        runner.armIfLoaded(record, timers: self)
        return true
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

    static func validate(key: String) throws(DurableTimerError) {
        guard !key.isEmpty, key.utf8.count <= 512 else { throw .invalidKey(key) }
    }

    private static func encode<Payload: Encodable>(_ payload: Payload, key: String, _ encoder: JSONEncoder) throws(DurableTimerError) -> Data {
        do {
            return try encoder.encode(payload)
        } catch {
            throw .payload(key: key, reason: "\(error)")
        }
    }

    private func info(_ record: DurableTimerRecord) -> DurableTimerInfo {
        let interval: Duration? = if case .interval(let nanoseconds) = record.recurrence { .nanoseconds(nanoseconds) } else { nil }
        let rule: CalendarRule? = if case .rule(let rule) = record.recurrence { rule } else { nil }
        let state: DurableTimerInfo.State =
            if record.isParked { .failed } else if runner.handler(record.handler) == nil { .orphaned } else if let lease = record.leaseUntil, lease > now() {
                .running
            } else { .scheduled }
        return DurableTimerInfo(
            key: record.key, handler: record.handler, nextDeadline: Date(nanosecondsSince1970: record.due), readyAt: Date(nanosecondsSince1970: record.readyAt),
            interval: interval, rule: rule, misfire: record.misfire, fireCount: record.fireCount, attempts: record.attempts, lastError: record.lastError,
            state: state)
    }

    /// Loads the horizon again (see ``Runner``).
    func refill() async { await runner.refill(timers: self) }
}
