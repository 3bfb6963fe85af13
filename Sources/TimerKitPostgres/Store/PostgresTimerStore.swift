import Foundation
import Logging
import PostgresNIO
import TimerKit
import TimerKitDurable

/// Durable timers in PostgreSQL, shared by every instance of a fleet.
///
/// One table keyed by (namespace, key) and a partial index on (namespace, ready time, key) for the
/// rows that are not parked; a sequence numbers the occurrences. Every decision about time — is a
/// timer due, has a lease expired, how long does a new lease last — is made in SQL with the
/// database's clock (`timerkit_now_ns()`), so hosts whose clocks disagree cannot fire one
/// occurrence twice or skip it. A claim is one `UPDATE` of the row picked `FOR UPDATE SKIP LOCKED`:
/// instances never wait for each other's row locks, and there is no global lock.
///
/// A write that makes a timer ready within the horizon sends a notification on its namespace's
/// channel (``channel(for:)``) in its own transaction; every instance listens on a connection of
/// its own and arms the timer at once.
/// When that connection drops, the instance reconnects with a growing pause and loads its horizon
/// again (notifications sent meanwhile are lost, the rows are not).
final class PostgresTimerStore: DurableTimerStore {
    /// Whose clock decides.
    enum TimeSource: Sendable {
        /// The database server's: the default, and what a fleet needs.
        case database
        /// The runner's (tests on a virtual clock: the runner passes its readings).
        case host
    }

    /// The pool of the store's calls.
    let client: PostgresClient
    /// A pool of one connection for the listener alone: `LISTEN` holds its connection for good,
    /// and must neither take one of the pool's nor wait behind the pool's callers.
    let listenerClient: PostgresClient
    let configuration: PostgresClient.Configuration
    let timeSource: TimeSource
    /// Writes ready within this many nanoseconds of now notify the other instances.
    let notifyWithin: Int64
    /// How long a call waits for the database before ``DurableTimerError/unreachable(reason:)``.
    let timeout: Duration
    /// The largest |host − database| that is not reported.
    let maximumSkew: Int64
    let onError: @Sendable (DurableTimerError) -> Void
    let logger: Logger
    let hostSkew: Int64
    /// How often the listening connection's liveness is checked (see ``changes(namespace:)``).
    let listenerCheck: Duration
    /// Connections of the pool that only the reserved lane's calls may use (see ``Lane``).
    let reservedConnections: Int
    /// The general lane's share of the pool: the pool's size less the reserved connections; `nil`
    /// for a pool of one, which the lanes share.
    let generalPermits: Permits?
    /// Where the reserved lane's calls and the pool's own work run: a dispatch queue of the
    /// store's, not Swift's cooperative pool, which handlers that block or spin can fill (then a
    /// renewal waited there past its lease, and the occurrence ran twice).
    let reservedExecutor = DispatchTaskExecutor(label: "TimerKitPostgres.Reserved")
    /// Open once the database has answered the store's opening (schema, clock): every call but
    /// the opening's waits for it.
    let opened: Latch
    /// Why the opening has not succeeded yet, while it retries in the background.
    let openingFailure = Locked<DurableTimerError?>(nil)
    /// Open once the listener's first `LISTEN` is in place (see ``untilOpen()``).
    let listening = Latch()
    /// Whether ``changes(namespace:)`` started a listener, and whether ``untilOpen()`` stopped
    /// waiting for it (then its first connection asks for a load, as a reconnection does).
    let listenerState = Locked<(started: Bool, gaveUp: Bool)>((false, false))
    private let applied = Locked<ClosedRange<Int>?>(nil)
    /// The versions this store's opening applied (`nil`: none, the database was current).
    var migrated: ClosedRange<Int>? { applied.withLock { $0 } }

    private let offset = Locked<(offset: Int64, uncertainty: Int64)>((0, 0))
    /// Told of each move of the offset beyond its uncertainty (``clockOffsetChanges()``).
    private let offsetWatchers = Locked<[AsyncStream<Int64>.Continuation]>([])
    private let tasks = Locked<(runs: [Task<Void, Never>], listeners: [Task<Void, Never>], closed: Bool)>(([], [], false))

    /// How this store's SQL differs from SQLite's.
    static let dialect = DurableTimerFilter.Dialect.postgres

    /// Batches larger than this notify once, with the window of ready times they touched, instead
    /// of once per timer.
    static let notifyEachUpTo = 64

    /// The connections a pool of `size` keeps for the reserved lane: a quarter, at least one — none
    /// for a pool of one.
    static func reserved(ofPool size: Int) -> Int { size >= 2 ? max(1, size / 4) : 0 }

    /// Opens a store: checks (or migrates) the schema and measures the clock.
    ///
    /// - Parameter waitsForDatabase: When the database cannot be reached, report it to `onError`
    ///   and go on opening in the background, retrying with a pause that doubles up to five
    ///   seconds, instead of throwing: calls made meanwhile wait for the opening within their
    ///   timeout, and ``untilOpen()`` returns once it is done. Any other failure throws.
    init(
        configuration: PostgresClient.Configuration, timeSource: TimeSource, notifyWithin: Duration, timeout: Duration, maximumSkew: Duration,
        upgrade: DurableTimers.SchemaUpgrade = .automatic, hostSkew: Int64 = 0, listenerCheck: Duration = .seconds(10), waitsForDatabase: Bool = false,
        onError: @escaping @Sendable (DurableTimerError) -> Void
    ) async throws(DurableTimerError) {
        self.hostSkew = hostSkew
        self.listenerCheck = listenerCheck
        self.configuration = configuration
        self.timeSource = timeSource
        self.notifyWithin = notifyWithin.saturatingNanoseconds
        self.timeout = timeout
        self.maximumSkew = maximumSkew.saturatingNanoseconds
        self.onError = onError
        var logger = Logger(label: "TimerKitPostgres")
        logger.logLevel = .warning
        self.logger = logger
        let size = max(configuration.options.maximumConnections, 1)
        reservedConnections = Self.reserved(ofPool: size)
        generalPermits = reservedConnections > 0 ? Permits(size - reservedConnections) : nil
        opened = Latch()
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        var listening = configuration
        listening.options.maximumConnections = 1
        listening.options.minimumConnections = 0
        listening.options.keepAliveBehavior = nil
        listenerClient = PostgresClient(configuration: listening, backgroundLogger: logger)
        let (client, listenerClient) = (client, listenerClient)
        // The pools' own work (connecting, keeping alive) on the store's executor, beside the
        // renewals that need its connections.
        let executor = reservedExecutor
        tasks.withLock {
            $0.runs = [Task(executorPreference: executor) { await client.run() }, Task(executorPreference: executor) { await listenerClient.run() }]
        }
        do {
            try await open(upgrade)
        } catch .unreachable(let reason) where waitsForDatabase {
            openingFailure.withLock { $0 = .unreachable(reason: reason) }
            onError(.unreachable(reason: "\(reason); opening again in the background: the runner starts once the database answers"))
            // Holds the store only while it tries: a store dropped meanwhile ends it.
            keep([
                Task { [weak self] in
                    var pause = Duration.milliseconds(100)
                    while !Task.isCancelled {
                        try? await Task.sleep(for: pause)
                        pause = min(pause * 2, .seconds(5))
                        guard !Task.isCancelled, let store = self else { return }
                        if await store.openedInBackground(upgrade) { return }
                    }
                }
            ])
        } catch {
            await close()
            throw error
        }
    }

    deinit {
        let (runs, listeners) = tasks.withLock { ($0.runs, $0.listeners) }
        for task in runs + listeners { task.cancel() }
    }

    /// The opening: the schema, the clock; then every waiting call goes ahead.
    private func open(_ upgrade: DurableTimers.SchemaUpgrade) async throws(DurableTimerError) {
        let steps = try await migrate(upgrade)
        applied.withLock { $0 = steps }
        if timeSource == .database { try await measureOffset() }
        openingFailure.withLock { $0 = nil }
        opened.open()
    }

    /// One more try of the opening in the background: `true` once it succeeded (or the store was
    /// closed meanwhile); a failure is reported.
    private func openedInBackground(_ upgrade: DurableTimers.SchemaUpgrade) async -> Bool {
        do {
            try await open(upgrade)
            return true
        } catch {
            guard !Task.isCancelled else { return true }
            openingFailure.withLock { $0 = error }
            onError(error)
            return false
        }
    }

    /// Returns once the store is open (at once, unless it was made while the database was away)
    /// and, if ``changes(namespace:)`` started a listener, once its `LISTEN` is in place — so
    /// that the runner's first load cannot miss a notification sent between the two — or when
    /// the calling task is cancelled. The wait for the listener lasts at most the call timeout:
    /// past it the listener asks for a load when it does connect.
    func untilOpen() async {
        guard await opened.wait(), listenerState.withLock({ $0.started }) else { return }
        let (listening, timeout) = (listening, timeout)
        let listens = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await listening.wait() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return await group.next() ?? false
        }
        if !listens { listenerState.withLock { $0.gaveUp = true } }
    }

    /// Keeps tasks that end with the store.
    func keep(_ tasks: [Task<Void, Never>]) {
        let closed = self.tasks.withLock { state in
            if !state.closed { state.listeners += tasks }
            return state.closed
        }
        if closed { for task in tasks { task.cancel() } }
    }

    /// Stops the listeners and the connection pools. Returns at once: postgres-nio's pool may take
    /// its time to close connections it is still opening (a server that refuses them).
    func close() async {
        let (runs, listeners) = tasks.withLock { state in
            defer { state = ([], [], true) }
            return (state.runs, state.listeners)
        }
        for listener in listeners { listener.cancel() }
        for run in runs { run.cancel() }
        for watcher in offsetWatchers.withLock({ $0 }) { watcher.finish() }
        // Whoever still waits for the opening goes on, and meets the closed pool.
        opened.open()
        listening.open()
    }

    // MARK: Time

    var clockOffset: Int64 { offset.withLock { $0.offset } }

    /// How far ``clockOffset`` may be off the true offset, in nanoseconds: half the round trip it
    /// was measured in.
    var clockOffsetUncertainty: Int64 { offset.withLock { $0.uncertainty } }

    /// How many round trips one measurement takes; the shortest is kept.
    static let offsetSamples = 5

    /// Measures the database's clock against the host's: the midpoint of the shortest of
    /// ``offsetSamples`` round trips on one connection, timed on the monotonic clock once the
    /// connection is in hand (waiting for a pooled connection, or a reconnect after a restart,
    /// is not part of any sample). Reports a skew that exceeds the limit by more than the
    /// measurement's own uncertainty.
    func measureOffset() async throws(DurableTimerError) {
        let samples = Self.offsetSamples
        let best = try await call(opening: true) { connection, logger in
            var best: (offset: Int64, roundTrip: Int64) = (0, .max)
            for _ in 0..<samples {
                let wall = TimerClock.wall.now.nanoseconds
                let start = TimerClock.continuous.now.nanoseconds
                var database: Int64 = 0
                for try await value in try await connection.query("SELECT timerkit_now_ns()", logger: logger).decode(Int64.self) {
                    database = value
                }
                let roundTrip = max(TimerClock.continuous.now.nanoseconds - start, 0)
                if roundTrip < best.roundTrip { best = (database - wall.addingSaturating(roundTrip / 2), roundTrip) }
            }
            return best
        }
        let measured = best.offset - hostSkew
        let uncertainty = best.roundTrip / 2
        let moved = offset.withLock { state -> Bool in
            defer { state = (measured, uncertainty) }
            // Two honest measurements differ by up to the sum of their uncertainties.
            return abs(measured - state.offset) > max(uncertainty + state.uncertainty, 1_000_000)
        }
        if moved { for watcher in offsetWatchers.withLock({ $0 }) { watcher.yield(measured) } }
        if abs(measured) - uncertainty > maximumSkew { onError(.clockSkew(milliseconds: measured / 1_000_000)) }
    }

    func clockOffsetChanges() -> AsyncStream<Int64>? {
        guard timeSource == .database else { return nil }
        let (stream, continuation) = AsyncStream.makeStream(of: Int64.self, bufferingPolicy: .bufferingNewest(1))
        offsetWatchers.withLock { $0.append(continuation) }
        return stream
    }

    /// `now` as SQL: the runner's reading for a host-time store, the database's otherwise.
    func now(_ reading: Int64) -> Int64? { timeSource == .host ? reading : nil }

    // MARK: Writing

    func put(_ record: DurableTimerRecord, conflict: DurableConflict) async throws(DurableTimerError) -> Bool {
        let values = PutValues(record: record, channel: Self.channel(for: record.namespace), horizon: notifyWithin)
        do {
            return try await call { connection, logger in
                var stored: Int64 = 0
                switch conflict {
                case .replace: for try await count in try await connection.execute(PutReplace(values: values), logger: logger) { stored = count }
                case .keep: for try await count in try await connection.execute(PutKeep(values: values), logger: logger) { stored = count }
                case .fail: for try await count in try await connection.execute(PutFail(values: values), logger: logger) { stored = count }
                }
                return stored == 1
            }
        } catch .store(let reason) where reason.contains("23505") {
            throw .keyInUse(record.key)
        }
    }

    func putAll(_ records: [DurableTimerRecord], conflict: DurableConflict) async throws(DurableTimerError) -> Int {
        guard !records.isEmpty else { return 0 }
        let columns = Columns(records)
        let onConflict =
            switch conflict {
            case .replace: Self.replaceClause
            case .keep: "ON CONFLICT (namespace, key) DO NOTHING"
            case .fail: ""
            }
        let notify = records.count <= Self.notifyEachUpTo ? "each" : "once"
        let horizon = notifyWithin
        do {
            return try await call { connection, logger in
                let rows = try await connection.query(
                    """
                    WITH written AS (
                        INSERT INTO timerkit_timers (namespace, key, handler, payload, interval_ns, rule, misfire, due_ns, ready_at_ns, sequence, parked, paused, trace_context)
                        SELECT s, k, h, convert_to(p, 'UTF8'), nullif(i, 0), nullif(r, ''), m, d, d, nextval('timerkit_sequence'),
                            EXISTS (SELECT 1 FROM timerkit_pauses z WHERE z.namespace = s AND z.handler IN ('', h)),
                            (CASE WHEN EXISTS (SELECT 1 FROM timerkit_pauses z WHERE z.namespace = s AND z.handler IN ('', h)) THEN 1 ELSE 0 END)::smallint,
                            nullif(c, '')
                        FROM unnest(\(columns.namespaces)::text[], \(columns.keys)::text[], \(columns.handlers)::text[], \(columns.payloads)::text[], \(columns.intervals)::bigint[],
                                    \(columns.rules)::text[], \(columns.misfires)::text[], \(columns.dues)::bigint[], \(columns.traceContexts)::text[])
                            AS w(s, k, h, p, i, r, m, d, c)
                        \(unescaped: onConflict)
                        RETURNING namespace, key, handler, ready_at_ns
                    ),
                    soon AS (
                        SELECT written.*, channels.c FROM written
                        JOIN unnest(\(columns.channelNamespaces)::text[], \(columns.channels)::text[]) AS channels(n, c) ON channels.n = written.namespace
                        WHERE ready_at_ns <= timerkit_now_ns() + \(horizon)
                    ),
                    notified AS (
                        SELECT pg_notify(c, \(unescaped: Notice.ready))
                        FROM soon WHERE \(notify) = 'each'
                        UNION ALL
                        SELECT pg_notify(c, \(unescaped: Notice.window))
                        FROM soon WHERE \(notify) = 'once' GROUP BY namespace, c
                    )
                    SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM notified)
                    """, logger: logger)
                var stored: Int64 = 0
                for try await (count, _) in rows.decode((Int64, Int64).self) { stored = count }
                return Int(stored)
            }
        } catch .store(let reason) where reason.contains("23505") {
            throw .keyInUse(records.count == 1 ? records[0].key : "one of \(records.count) keys")
        }
    }

    /// Removes the timer and tells the other instances (`NOTIFY`), so that one running it cancels
    /// its handler at once; whether a live lease held it is decided on the database's clock.
    func delete(namespace: String, key: String, now reading: Int64) async throws(DurableTimerError) -> DurableRemoval? {
        let now = now(reading)
        let query: PostgresQuery = """
            WITH c AS (SELECT coalesce(\(now)::bigint, timerkit_now_ns()) AS ns),
            removed AS (
                DELETE FROM timerkit_timers WHERE namespace = \(namespace) AND key = \(key)
                RETURNING \(unescaped: Self.allColumns)
            ),
            notified AS (
                SELECT pg_notify(\(Self.channel(for: namespace)), \(unescaped: Notice.removal)) FROM removed
            )
            SELECT removed.*, (removed.owner IS NOT NULL AND removed.lease_until_ns > c.ns) FROM removed, c, (SELECT count(*) FROM notified) n
            """
        return try await call { connection, logger in
            var removal: DurableRemoval?
            for try await row in try await connection.query(query, logger: logger) {
                let cells = row.makeRandomAccess()
                removal = DurableRemoval(record: Self.record(row), wasClaimed: try cells[cells.count - 1].decode(Bool.self))
            }
            return removal
        }
    }
}

/// The columns of a batch of records, as arrays bound to one statement.
private struct Columns {
    var namespaces: [String] = []
    var keys: [String] = []
    var handlers: [String] = []
    var payloads: [String] = []
    /// 0 for none (an interval is never 0).
    var intervals: [Int64] = []
    /// Empty for none.
    var rules: [String] = []
    var misfires: [String] = []
    var dues: [Int64] = []
    /// Empty for none.
    var traceContexts: [String] = []
    /// Each namespace of the batch once, and its notification channel.
    var channelNamespaces: [String] = []
    var channels: [String] = []

    init(_ records: [DurableTimerRecord]) {
        for record in records {
            let (interval, rule) = StoredForms.columns(record.recurrence)
            namespaces.append(record.namespace)
            keys.append(record.key)
            handlers.append(record.handler)
            payloads.append(String(decoding: record.payload, as: UTF8.self))
            intervals.append(interval ?? 0)
            rules.append(rule ?? "")
            misfires.append(StoredForms.misfire(record.misfire))
            dues.append(record.due)
            traceContexts.append(StoredForms.traceContext(record.traceContext) ?? "")
        }
        channelNamespaces = Array(Set(namespaces))
        channels = channelNamespaces.map(PostgresTimerStore.channel(for:))
    }
}
