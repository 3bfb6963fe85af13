import Foundation
import TimerKit

/// Timers that survive a restart: stored in a SQLite file, run by name, exactly once while the
/// process that claimed them lives, at least once across crashes.
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
///   closure; after a restart, ``register(_:payload:timeout:retry:maxConcurrentRuns:lease:_:)`` binds the name again. A timer
///   whose handler is not registered waits untouched (``orphans(limit:)``); one whose payload does
///   not decode as the registered type is parked as failed, never run with a wrong value.
/// - **No polling.** The runner loads the timers due within its horizon into TimerKit's engine as
///   wall-clock one-shots and loads again before the horizon runs out; a timer scheduled here
///   inside the horizon is armed at once. A handler starts within the engine's wake-up latency of
///   its deadline, not a poll interval later.
/// - **Exactly once while the process lives; never lost.** Firing claims the timer with a lease,
///   fenced by a token of its own; the lease is renewed until the run's end is written (and that
///   write is retried until it lands), and a runner never claims a key it is running. A process
///   that dies mid-run (or freezes past its lease) leaves the claim to expire: the occurrence then
///   runs again, with ``DurableFire/attempt`` one higher and the same
///   ``DurableFire/idempotencyKey``. A handler that throws is retried with a growing delay; after
///   ``Options/maxAttempts`` — thrown, or started that often by processes that died — the timer is
///   parked as failed with its reason, never dropped.
/// - **Nothing stored crashes a runner.** Dates are kept in ``earliestDate`` ..< ``latestDate``;
///   a row that does not read, or that the runner cannot plan for, is parked with the reason.
/// - **Time** is the wall clock, as nanoseconds since 1970 (UTC): monotonic clocks restart at boot.
///   See the "Durable timers" article for what a step of the host clock does.
/// - **Keys** (and namespaces and handler names) are 1 to 512 bytes of UTF-8 without control
///   characters, compared as bytes: `"café"` in NFC and in NFD are two keys.
public final class DurableTimers: Sendable {
    /// The namespace this runner's keys live in: runners of different namespaces share a file
    /// without seeing each other's timers.
    public let namespace: String
    /// The clock deadlines are read on: `TimerClock.wall`, or a virtual clock in tests.
    public let clock: TimerClock
    /// How the runner loads, claims, retries and spreads.
    public let options: Options

    package let store: any DurableTimerStore
    /// This runner's id: its claims' tokens are `owner/n`.
    let owner = UUID().uuidString

    /// This runner's id, as ``DurableInstance/id``, ``DurableTimerRun/instance`` and the first part
    /// of ``DurableTimerInfo/owner`` name it.
    public var instance: String { owner }
    let runner: Runner

    /// Opens (or creates) the SQLite file at `path` and makes a runner for the timers of
    /// `namespace` in it. Call ``run()`` (or ``start()``) to fire them.
    ///
    /// - Throws: ``DurableTimerError/cannotOpen(path:reason:)`` when the file cannot be opened or
    ///   created, ``DurableTimerError/corrupt(path:reason:)`` when it is not a database,
    ///   ``DurableTimerError/notACalendarClock(_:)`` for a continuous or suspending clock,
    ///   ``DurableTimerError/invalidKey(_:)`` for an invalid namespace,
    ///   ``DurableTimerError/invalidDuration(_:)`` for options out of range,
    ///   ``DurableTimerError/schema(reason:)`` for a schema newer than this build's (or older, with
    ///   ``SchemaUpgrade/verifyOnly``).
    public convenience init(path: String, namespace: String = "default", clock: TimerClock = .wall, options: Options = Options()) throws(DurableTimerError) {
        // Before the file is opened or migrated: bad options change nothing.
        try options.validate(namespace: namespace)
        let store = try SQLiteTimerStore(
            path: path, busyTimeout: options.busyTimeout, durability: options.durability, upgrade: options.schemaUpgrade, executor: clock.taskExecutor)
        try self.init(store: store, namespace: namespace, clock: clock, options: options)
    }

    /// Makes a runner on any store (the package's PostgreSQL store uses it).
    package init(store: any DurableTimerStore, namespace: String, clock: TimerClock, options: Options) throws(DurableTimerError) {
        guard clock.kind == .wall || clock.kind == .virtual else { throw .notACalendarClock("\(clock.kind)") }
        try options.validate(namespace: namespace)
        self.store = store
        self.namespace = namespace
        self.clock = clock
        self.options = options
        let context = Runner.Context(
            store: store, namespace: namespace, clock: clock, options: options,
            controlExecutor: store.executor ?? clock.taskExecutor,
            renewalExecutor: clock.taskExecutor ?? DispatchTaskExecutor(label: "TimerKitDurable.Renewals"))
        self.runner = Runner(context: context, owner: owner)
    }

    deinit {
        runner.stop()
    }

    // MARK: Handlers

    /// Binds `name` to a handler for payloads of `payload`'s type. Timers stored for the name fire
    /// once it is registered (also those that waited as orphans).
    ///
    /// While the process lives, one occurrence runs once; a process that dies mid-run leaves it to
    /// run again (at least once): use ``DurableFire/idempotencyKey`` for side effects outside the
    /// store. When the handler throws, the occurrence is retried as `retry` says (the runner's
    /// ``Options/maxAttempts``, ``Options/retryDelay`` and ``Options/maxRetryDelay`` without one).
    ///
    /// The handler's task is cancelled — cooperatively: it ends when it checks — when it outlives
    /// `timeout` (then the run counts as a failed attempt), when its timer is cancelled or replaced
    /// (here or on another instance), when its claim's lease is lost, and when a shutdown's grace
    /// period ends. A handler that ignores cancellation keeps its claim (renewed) until it returns:
    /// the runner never starts a second run beside it.
    ///
    /// `maxConcurrentRuns` limits the handler's runs at once in this process (each instance of a
    /// fleet has its own limit), within ``Options/maxConcurrentHandlers``: its timers that come
    /// due while it has no room wait unclaimed, so that an instance with room may take them, and
    /// the other handlers' timers go past them. `lease` is how long its claims hold a timer
    /// before another instance may take it — the time to fail over after a crash, and the longest
    /// freeze a run survives — renewed every third of it; the claim of a timer whose handler was
    /// not known when it was claimed (a backlog's sweep, a manual fire) is written with
    /// ``Options/lease`` and set to the handler's at its start.
    ///
    /// - Parameters:
    ///   - name: The handler's name, stored with each of its timers (1 to 512 bytes of UTF-8).
    ///   - payload: The type its timers' payloads decode as.
    ///   - timeout: The longest a run may take; `nil` for ``Options/handlerTimeout``.
    ///   - retry: How its failed runs are retried; `nil` for the runner's options.
    ///   - maxConcurrentRuns: The most runs of it at once in this process; `nil` for no limit of
    ///     its own (``Options/maxConcurrentHandlers`` bounds every handler's together).
    ///   - lease: Its claims' lease; `nil` for ``Options/lease``.
    ///   - handler: Runs each occurrence, with its payload and what the runner knows of the fire.
    /// - Throws: ``DurableTimerError/handlerAlreadyRegistered(_:)``, ``DurableTimerError/invalidKey(_:)``
    ///   for an invalid name, ``DurableTimerError/invalidDuration(_:)`` for a timeout or a lease of
    ///   zero or less, a lease of more than a day, a retry policy with fewer than one attempt or a delay of zero or less, or a
    ///   `maxConcurrentRuns` under 1.
    public func register<Payload: Codable & Sendable>(
        _ name: String, payload: Payload.Type, timeout: Duration? = nil, retry: DurableRetryPolicy? = nil, maxConcurrentRuns: Int? = nil,
        lease: Duration? = nil, _ handler: @escaping @Sendable (Payload, DurableFire) async throws -> Void
    ) async throws(DurableTimerError) {
        try DurableLimits.validate(key: name)
        if let timeout, timeout <= .zero { throw .invalidDuration("a handler's timeout must be more than zero") }
        if let lease, lease <= .zero { throw .invalidDuration("a handler's lease must be more than zero") }
        if let lease, lease > Options.longest { throw .invalidDuration("a handler's lease must be at most a day (it was \(lease))") }
        if let maxConcurrentRuns, maxConcurrentRuns < 1 {
            throw .invalidDuration("a handler's maxConcurrentRuns must be at least 1 (it was \(maxConcurrentRuns))")
        }
        if let retry, retry.maxAttempts < 1 || retry.delay <= .zero || retry.maxDelay < retry.delay {
            throw .invalidDuration("a retry policy needs maxAttempts of at least 1, a delay of more than zero, and a maxDelay of at least the delay")
        }
        let erased: Runner.Handler = { data, fire in
            let payload: Payload
            do {
                payload = try JSONDecoder().decode(Payload.self, from: data)
            } catch {
                throw Runner.PayloadDecodingFailed(reason: "\(error)")
            }
            try await handler(payload, fire)
        }
        let retryPolicy = retry.map { retry in
            RunnerStateMachine.Retry(
                maxAttempts: retry.maxAttempts, delay: retry.delay.saturatingNanoseconds, maxDelay: retry.maxDelay.saturatingNanoseconds,
                jitterPermille: Int64((retry.jitter * 1000).rounded()))
        }
        let policy = RunnerStateMachine.HandlerPolicy(retry: retryPolicy, maxConcurrentRuns: maxConcurrentRuns, lease: lease?.saturatingNanoseconds)
        try runner.register(name, Runner.Registered(handler: erased, timeout: timeout, policy: policy))
        if runner.isStarted { await runner.refill() }
    }

    // MARK: Inspecting

    /// The timer under `key`, with its last recorded run, or `nil`.
    public func timer(key: String) async throws(DurableTimerError) -> DurableTimerInfo? {
        guard DurableLimits.isValid(key: key), var timer = try await store.record(namespace: namespace, key: key).map(info) else { return nil }
        timer.lastRun = try await store.history(namespace: namespace, key: key, limit: 1).first
        return timer
    }

    /// The namespace's timers in the order they come due, at most `limit`.
    public func timers(limit: Int = 1_000) async throws(DurableTimerError) -> [DurableTimerInfo] {
        try await store.records(namespace: namespace, after: nil, limit: max(limit, 0)).map(info)
    }

    /// A page of the namespace's timers that `query` matches, in key order; its ``DurableTimerPage/next``
    /// starts the next page. Statuses are decided on the runner's clock at the time of the call.
    ///
    /// - Throws: ``DurableTimerError/invalidDate(_:)`` for a date outside the range of dates; the
    ///   store's errors.
    public func timers(matching query: DurableTimerQuery) async throws(DurableTimerError) -> DurableTimerPage {
        let limit = min(max(query.limit, 1), 10_000)
        var filter = DurableTimerFilter(
            statuses: query.statuses, handler: query.handler, keyPrefix: query.keyPrefix,
            dueFrom: try query.dueFrom.map { (date) throws(DurableTimerError) in try DurableLimits.nanoseconds(of: date) },
            dueBefore: try query.dueBefore.map { (date) throws(DurableTimerError) in try DurableLimits.nanoseconds(of: date) })
        let now = now()
        if let lateBy = query.lateBy { filter.lateBefore = now.addingSaturating(-max(lateBy, .zero).saturatingNanoseconds) }
        let records = try await store.query(namespace: namespace, filter, now: now, afterKey: query.after?.key, limit: limit)
        let next = records.count == limit ? records.last.map { DurableTimerQuery.Cursor(after: $0.key) } : nil
        return DurableTimerPage(timers: records.map(info), next: next)
    }

    /// The timers whose handler is not registered with this runner: they wait, untouched, until it
    /// is (a renamed handler, or a runner that has not registered it yet).
    public func orphans(limit: Int = 1_000) async throws(DurableTimerError) -> [DurableTimerInfo] {
        try await store.orphans(namespace: namespace, handlers: runner.handlerNames, limit: max(limit, 0)).map(info)
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
    /// ``shutdown(gracePeriod:)``. Idempotent.
    ///
    /// A PostgreSQL runner made while its database could not be reached waits here for it (the
    /// store retries with a pause that doubles up to five seconds and reports each failure to
    /// ``Options/onError``). A shutdown, or cancelling the calling task, ends the wait; after a
    /// cancellation the runner still loads its horizon once the database answers.
    public func start() async {
        guard runner.markStarted() else { return }
        if let changes = store.changes(namespace: namespace) { runner.follow(changes) }
        if let offsets = store.clockOffsetChanges() { runner.follow(offsets: offsets) }
        if await runner.untilStoreOpens() {
            runner.startHeartbeat()
            await runner.refill()
        } else {
            let (store, runner) = (store, runner)
            runner.spawn {
                await store.untilOpen()
                runner.startHeartbeat()  // nothing once the runner has stopped
                await runner.refill()
            }
        }
    }

    /// Starts the runner and returns when the calling task is cancelled, after a graceful shutdown
    /// (``shutdown(gracePeriod:)`` with its default grace period).
    public func run() async {
        await start()
        await withTaskCancellationHandler {
            await runner.waitUntilStopped()
        } onCancel: {
            runner.stop()
        }
        await shutdown()
    }

    /// Stops firing and returns once everything this runner claimed is written back, or after
    /// `gracePeriod` (on the runner's clock), whichever comes first. Idempotent.
    ///
    /// Nothing new is armed or claimed. Claims that a claim round in flight takes are given back
    /// at once, their attempt not counted. Handlers under way finish and their ends are written;
    /// those still running when the grace period ends are cancelled (cooperatively), and
    /// `shutdown` returns: one that then ends by throwing gives its claim back, one that returns
    /// completes as usual — if the process still lives; otherwise its lease expires and the
    /// occurrence runs again elsewhere.
    public func shutdown(gracePeriod: Duration = .seconds(30)) async {
        await runner.shutdown(gracePeriod: gracePeriod)
        // A runner whose store never opened left no record.
        if runner.hasRecordedAlive { try? await store.removeInstance(namespace: namespace, id: owner) }
    }

    // MARK: Plumbing

    /// The durable clock's reading, in nanoseconds since 1970.
    package func now() -> Int64 { runner.context.now() }

    func info(_ record: DurableTimerRecord) -> DurableTimerInfo {
        let interval: Duration? = if case .interval(let nanoseconds) = record.recurrence { .nanoseconds(nanoseconds) } else { nil }
        let rule: CalendarRule? = if case .rule(let rule) = record.recurrence { rule } else { nil }
        let state: DurableTimerInfo.State =
            if record.isPaused { .paused } else if record.isParked { .failed } else if runner.handler(record.handler) == nil {
                .orphaned
            } else if let lease = record.leaseUntil, lease > now() {
                .running
            } else { .scheduled }
        return DurableTimerInfo(
            key: record.key, handler: record.handler, nextDeadline: Date(nanosecondsSince1970: record.due), readyAt: Date(nanosecondsSince1970: record.readyAt),
            interval: interval, rule: rule, schedule: record.recurrence.calendarSchedule, owner: record.owner,
            leaseUntil: record.leaseUntil.map { Date(nanosecondsSince1970: $0) }, misfire: record.misfire, fireCount: record.fireCount,
            attempts: record.attempts, lastError: record.lastError,
            state: state)
    }
}
