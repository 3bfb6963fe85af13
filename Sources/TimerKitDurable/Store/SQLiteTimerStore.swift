import Foundation
import GRDB

/// Durable timers in one SQLite file (through GRDB): the embedded default store.
///
/// One table, keyed by (namespace, key), with an index on (namespace, parked, ready time) that
/// serves both the runner's horizon and its claims. The file is in WAL mode, so readers (listing
/// timers) never wait for the runner's writes; every write is one `BEGIN IMMEDIATE` transaction, so
/// two processes on one file serialize instead of deadlocking, and wait for each other up to the
/// busy timeout before ``DurableTimerError/locked(reason:)``.
///
/// Durability: with ``DurableTimers/Durability/full`` (the default) a schedule that returned is on
/// disk (`synchronous = FULL`); ``DurableTimers/Durability/normal`` survives a crash of the process
/// but may lose the last writes on a power loss, for several times the throughput.
final class SQLiteTimerStore: DurableTimerStore {
    /// How this store's SQL differs from PostgreSQL's.
    static let dialect = DurableTimerFilter.Dialect.sqlite
    let database: any DatabaseWriter
    let path: String
    /// Whether the database is the application's (``init(writer:upgrade:executor:)``), whose
    /// transactions the runner's writes may join.
    let isApplicationDatabase: Bool
    /// Where the store's blocking calls run: a serial queue of its own, or a virtual clock's
    /// executor (whose quiescence then covers them, so that tests stay exact). The runner's own
    /// work runs there too (SQLite writes one at a time anyway).
    let executor: (any TaskExecutor)?

    /// - Parameters:
    ///   - upgrade: Whether opening may migrate the schema, or only checks it.
    ///   - pragmas: Statements run on opening, after the store's own (tests: a page limit that makes
    ///     the file "full").
    ///   - executor: Where the calls run; `nil` for a dispatch queue of the store's own.
    init(
        path: String, busyTimeout: Duration, durability: DurableTimers.Durability, upgrade: DurableTimers.SchemaUpgrade = .automatic, pragmas: [String] = [],
        executor: (any TaskExecutor)? = nil
    ) throws(DurableTimerError) {
        self.path = path
        self.executor = executor ?? DispatchTaskExecutor(label: "TimerKitDurable.SQLiteTimerStore")
        isApplicationDatabase = false
        var configuration = Configuration()
        configuration.busyMode = .timeout(TimeInterval(busyTimeout.saturatingNanoseconds) / 1e9)
        configuration.journalMode = .wal
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            for pragma in pragmas { try db.execute(sql: pragma) }
        }
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
            try Self.migrate(database, upgrade: upgrade, path: path)
        } catch {
            throw Self.mapped(error, path: path, opening: true)
        }
    }

    /// The store in the application's own database (its pool or queue, its configuration: WAL,
    /// busy timeout and durability are the application's), its tables beside the application's.
    init(writer: any DatabaseWriter, upgrade: DurableTimers.SchemaUpgrade = .automatic, executor: (any TaskExecutor)? = nil) throws(DurableTimerError) {
        path = writer.path
        isApplicationDatabase = true
        self.executor = executor ?? DispatchTaskExecutor(label: "TimerKitDurable.SQLiteTimerStore")
        database = writer
        // GRDB's default fails a write at once while another connection writes (another process
        // on the file, `timerkit durable`): a renewal refused so would lose its claims.
        if case .immediateError = writer.configuration.busyMode {
            throw .cannotOpen(
                path: path,
                reason:
                    "the database's busyMode is .immediateError, so the runner's writes would fail whenever another connection writes; set its Configuration's busyMode to .timeout(seconds)"
            )
        }
        do {
            try Self.migrate(writer, upgrade: upgrade, path: path)
        } catch {
            throw Self.mapped(error, path: path, opening: true)
        }
    }

    // MARK: Writing

    func put(_ record: DurableTimerRecord, conflict: DurableConflict) async throws(DurableTimerError) -> Bool {
        try await write { db in try Self.put(record, conflict: conflict, db) }
    }

    /// One schedule's write, in `db`'s transaction.
    static func put(_ record: DurableTimerRecord, conflict: DurableConflict, _ db: Database) throws -> Bool {
        try put(record, conflict: conflict, sequence: nextSequence(db), db)
    }

    func putAll(_ records: [DurableTimerRecord], conflict: DurableConflict) async throws(DurableTimerError) -> Int {
        try await write { db in
            var sequence = try Self.nextSequences(records.count, db)
            var stored = 0
            var paused: [String: Bool] = [:]
            for record in records {
                let isPaused = try paused[record.handler] ?? Self.isPaused(namespace: record.namespace, handler: record.handler, db)
                paused[record.handler] = isPaused
                if try Self.put(record, conflict: conflict, sequence: sequence, paused: isPaused, db) { stored += 1 }
                sequence += 1
            }
            return stored
        }
    }

    /// Whether timers of `handler` are stored paused: it, or the namespace, is paused.
    private static func isPaused(namespace: String, handler: String, _ db: Database) throws -> Bool {
        try db.row("SELECT 1 FROM timerkit_pauses WHERE namespace = ? AND handler IN ('', ?)", [namespace, handler]) != nil
    }

    private static func put(_ record: DurableTimerRecord, conflict: DurableConflict, sequence: Int64, _ db: Database) throws -> Bool {
        try put(record, conflict: conflict, sequence: sequence, paused: isPaused(namespace: record.namespace, handler: record.handler, db), db)
    }

    private static func put(_ record: DurableTimerRecord, conflict: DurableConflict, sequence: Int64, paused: Bool, _ db: Database) throws -> Bool {
        if conflict != .replace,
            try db.row("SELECT 1 FROM timerkit_timers WHERE namespace = ? AND key = ?", [record.namespace, record.key]) != nil
        {
            if conflict == .keep { return false }
            throw DurableTimerError.keyInUse(record.key)
        }
        let (interval, rule) = StoredForms.columns(record.recurrence)
        try db.run(
            """
            INSERT OR REPLACE INTO timerkit_timers
                (namespace, key, handler, payload, interval_ns, rule, misfire, due_ns, ready_at_ns, sequence,
                 fire_count, attempts, skipped, last_error, parked, owner, lease_until_ns, paused, trace_context)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, NULL, ?, NULL, NULL, ?, ?)
            """,
            [
                record.namespace, record.key, record.handler, record.payload, interval, rule, StoredForms.misfire(record.misfire), record.due,
                record.readyAt, sequence, paused ? 1 : 0, paused ? 1 : 0, StoredForms.traceContext(record.traceContext)
            ])
        return true
    }

    /// A sequence number unique in the file: every occurrence gets its own, also when a key is
    /// removed and used again, so that an idempotency key never repeats.
    private static func nextSequence(_ db: Database) throws -> Int64 {
        try nextSequences(1, db)
    }

    /// The first of `count` consecutive sequence numbers, taken at once.
    private static func nextSequences(_ count: Int, _ db: Database) throws -> Int64 {
        let first: Int64? = try db.value("UPDATE timerkit_sequence SET next = next + ? WHERE id = 0 RETURNING next - ?", [count, count])
        guard let first else { throw DurableTimerError.store(reason: "the sequence table is empty") }
        return first
    }

    func delete(namespace: String, key: String, now: Int64) async throws(DurableTimerError) -> DurableRemoval? {
        try await write { db in try Self.delete(namespace: namespace, key: key, now: now, db) }
    }

    /// One removal, in `db`'s transaction.
    static func delete(namespace: String, key: String, now: Int64, _ db: Database) throws -> DurableRemoval? {
        try db.row("DELETE FROM timerkit_timers WHERE namespace = ? AND key = ? RETURNING *", [namespace, key]).map { row in
            let record = Self.record(row)
            return DurableRemoval(record: record, wasClaimed: record.owner != nil && (record.leaseUntil ?? .min) > now)
        }
    }

    func claim(namespace: String, key: String, owner: String, now: Int64, leaseUntil: Int64, early: Bool) async throws(DurableTimerError) -> DurableClaim {
        try await write { db in
            let ready = early ? "(owner IS NULL OR lease_until_ns <= ?)" : "ready_at_ns <= ?"
            if let row = try db.row(
                """
                UPDATE timerkit_timers SET owner = ?, lease_until_ns = ?, ready_at_ns = ?, attempts = attempts + 1
                WHERE namespace = ? AND key = ? AND parked = 0 AND \(ready)
                RETURNING *
                """, [owner, leaseUntil, leaseUntil, namespace, key, now])
            {
                return .claimed(Self.record(row))
            }
            let readyAt: Int64? = try db.value("SELECT ready_at_ns FROM timerkit_timers WHERE namespace = ? AND key = ? AND parked = 0", [namespace, key])
            return readyAt.map { .notReady(readyAt: $0) } ?? .gone
        }
    }

    func claim(namespace: String, keys: [String], owner: String, now: Int64, leaseUntil: Int64) async throws(DurableTimerError) -> DurableClaimBatch {
        try await write { db in
            var batch = DurableClaimBatch(claimed: [], waiting: [:])
            for key in keys {
                if let row = try db.row(
                    """
                    UPDATE timerkit_timers SET owner = ?, lease_until_ns = ?, ready_at_ns = ?, attempts = attempts + 1
                    WHERE namespace = ? AND key = ? AND parked = 0 AND ready_at_ns <= ?
                    RETURNING *
                    """, [owner, leaseUntil, leaseUntil, namespace, key, now])
                {
                    batch.claimed.append(Self.record(row))
                } else if let row = try db.row(
                    "SELECT ready_at_ns, owner IS NOT NULL AS held FROM timerkit_timers WHERE namespace = ? AND key = ? AND parked = 0", [namespace, key])
                {
                    var reader = SQLiteRowReader(row: row)
                    batch.waiting[StoredKey(key)] = reader.integer("ready_at_ns")
                    if reader.integer("held") != 0 { batch.held.insert(StoredKey(key)) }
                }
            }
            return batch
        }
    }

    func sweep(namespace: String, handlers: [String], owner: String, excluding: [String], now: Int64, leaseUntil: Int64, limit: Int)
        async throws(DurableTimerError)
        -> [DurableTimerRecord]
    {
        guard !handlers.isEmpty, limit > 0 else { return [] }
        return try await write { db in
            let names = Array(repeating: "?", count: handlers.count).joined(separator: ", ")
            let held = Array(repeating: "?", count: excluding.count).joined(separator: ", ")
            // One writer at a time (the write lock): no two sweeps can take the same row.
            return try db.rows(
                """
                UPDATE timerkit_timers SET owner = ?, lease_until_ns = ?, ready_at_ns = ?, attempts = attempts + 1
                WHERE namespace = ? AND key IN (
                    SELECT key FROM timerkit_timers WHERE namespace = ? AND parked = 0 AND ready_at_ns <= ? AND handler IN (\(names))
                        AND (owner IS NULL OR owner NOT IN (\(held)))
                    ORDER BY ready_at_ns, key LIMIT ?)
                RETURNING *
                """, [owner, leaseUntil, leaseUntil, namespace, namespace, now] + StatementArguments(handlers) + StatementArguments(excluding) + [limit]
            ).map { Self.record($0) }
        }
    }

    func finish(namespace: String, key: String, owner: String, sequence: Int64, outcome: DurableTimerOutcome, run: DurableTimerRun?, keep: Int)
        async throws(DurableTimerError) -> Bool
    {
        try await write { db in
            let changed = try Self.finish(namespace: namespace, key: key, owner: owner, sequence: sequence, outcome: outcome, db)
            if changed, let run, keep > 0 { try Self.record(run, namespace: namespace, keep: keep, db) }
            return changed
        }
    }

    private static func finish(namespace: String, key: String, owner: String, sequence: Int64, outcome: DurableTimerOutcome, _ db: Database) throws -> Bool {
        let fence = "namespace = ? AND key = ? AND owner = ? AND sequence = ?"
        let fenceArguments: StatementArguments = [namespace, key, owner, sequence]
        switch outcome {
        case .delete:
            try db.run("DELETE FROM timerkit_timers WHERE \(fence)", fenceArguments)
        case .advance(let due, let skipped, let fired):
            try db.run(
                """
                UPDATE timerkit_timers SET due_ns = ?, ready_at_ns = ?, sequence = ?, skipped = ?, fire_count = fire_count + ?,
                    attempts = 0, last_error = NULL, owner = NULL, lease_until_ns = NULL
                WHERE \(fence)
                """, [due, due, try Self.nextSequence(db), skipped, fired ? 1 : 0] + fenceArguments)
        case .retry(let readyAt, let error):
            try db.run(
                "UPDATE timerkit_timers SET ready_at_ns = ?, last_error = ?, owner = NULL, lease_until_ns = NULL WHERE \(fence)",
                [readyAt, error] + fenceArguments)
        case .park(let error):
            // A timer paused while it ran stays paused, and is parked once resumed.
            try db.run(
                """
                UPDATE timerkit_timers SET \(Self.dialect.parkAssignments), last_error = ?, owner = NULL,
                    lease_until_ns = NULL
                WHERE \(fence)
                """, [error] + fenceArguments)
        }
        return db.changesCount > 0
    }

    func finishAll(namespace: String, completed: [DurableCompletion], keep: Int) async throws(DurableTimerError) -> Set<StoredKey> {
        try await write { db in
            var removed: Set<StoredKey> = []
            for completion in completed {
                try db.run(
                    "DELETE FROM timerkit_timers WHERE namespace = ? AND key = ? AND owner = ? AND sequence = ?",
                    [namespace, completion.key, completion.owner, completion.sequence])
                guard db.changesCount > 0 else { continue }
                removed.insert(StoredKey(completion.key))
                // A one-shot has at most as many runs as its attempts: fewer than `keep`, nothing
                // to drop (a key used again ages out).
                if let run = completion.run, keep > 0 { try Self.record(run, namespace: namespace, keep: keep, prune: run.attempt >= keep, db) }
            }
            return removed
        }
    }

    /// Adds `run` to the history and (`prune`) drops the timer's runs older than its last `keep`.
    private static func record(_ run: DurableTimerRun, namespace: String, keep: Int, prune: Bool = true, _ db: Database) throws {
        try db.run(
            """
            INSERT OR IGNORE INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                namespace, run.key, run.startedNanoseconds, run.sequence, run.attempt, run.handler, run.dueNanoseconds, run.endedNanoseconds,
                run.outcome.rawValue, run.instance, run.error
            ])
        guard prune else { return }
        try db.run(
            """
            DELETE FROM timerkit_runs WHERE namespace = ?1 AND key = ?2 AND started_ns < (
                SELECT started_ns FROM timerkit_runs WHERE namespace = ?1 AND key = ?2 ORDER BY started_ns DESC LIMIT 1 OFFSET ?3)
            """, [namespace, run.key, keep - 1])
    }

    func renewAll(namespace: String, claims: [DurableHeldClaim], now: Int64, leaseUntil: Int64) async throws(DurableTimerError) -> Set<StoredKey> {
        try await write { db in
            var renewed: Set<StoredKey> = []
            for claim in claims {
                try db.run(
                    "UPDATE timerkit_timers SET lease_until_ns = ?, ready_at_ns = ? WHERE namespace = ? AND key = ? AND owner = ? AND sequence = ?",
                    [leaseUntil, leaseUntil, namespace, claim.key, claim.owner, claim.sequence])
                if db.changesCount > 0 { renewed.insert(StoredKey(claim.key)) }
            }
            return renewed
        }
    }

    func release(namespace: String, key: String, owner: String, sequence: Int64, readyAt: Int64) async throws(DurableTimerError) -> Bool {
        try await write { db in
            try db.run(
                """
                UPDATE timerkit_timers SET ready_at_ns = ?, attempts = max(attempts - 1, 0), owner = NULL, lease_until_ns = NULL
                WHERE namespace = ? AND key = ? AND owner = ? AND sequence = ?
                """, [readyAt, namespace, key, owner, sequence])
            return db.changesCount > 0
        }
    }

    func move(namespace: String, key: String, due: Int64, readyAt: Int64, ifSequence: Int64?) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await write { db in try Self.move(namespace: namespace, key: key, due: due, readyAt: readyAt, ifSequence: ifSequence, db) }
    }

    /// One move, in `db`'s transaction: of the occurrence `ifSequence` only, when one is given.
    static func move(namespace: String, key: String, due: Int64, readyAt: Int64, ifSequence: Int64? = nil, _ db: Database) throws -> DurableTimerRecord? {
        try db.row(
            """
            UPDATE timerkit_timers SET due_ns = ?, ready_at_ns = ?, sequence = ?, attempts = 0, skipped = 0, last_error = NULL,
                \(Self.dialect.unparkAssignments)
            WHERE namespace = ? AND key = ? AND owner IS NULL AND (? IS NULL OR sequence = ?)
            RETURNING *
            """, [due, readyAt, try nextSequence(db), namespace, key, ifSequence, ifSequence]
        ).map { record($0) }
    }

    /// The row stored under `key`, read on `db` (the application's connection, after its commit).
    static func committed(namespace: String, key: String, _ db: Database) throws -> DurableTimerRecord? {
        try db.row("SELECT * FROM timerkit_timers WHERE namespace = ? AND key = ?", [namespace, key]).map { record($0) }
    }

    /// Runs `body` on the application's `db`, inside the transaction it has open there.
    ///
    /// - Throws: ``DurableTimerError/store(reason:)`` outside a transaction; the store's mapped
    ///   errors.
    func joining<T>(_ db: Database, _ body: (Database) throws -> T) throws(DurableTimerError) -> T {
        guard db.isInsideTransaction else {
            throw .store(reason: "a call with `in: db` joins the application's transaction: make it inside `write { db in … }`")
        }
        do {
            return try body(db)
        } catch {
            throw Self.mapped(error, path: path, opening: false)
        }
    }
}
