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
    private let database: any DatabaseWriter
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

    // MARK: Schema

    /// Brings the file's schema to ``SchemaVersions/current``, or checks that it is there
    /// (``DurableTimers/SchemaUpgrade/verifyOnly``): the version is read, and the migrations
    /// applied, inside one `BEGIN IMMEDIATE` transaction, so of two processes opening the file at
    /// once one migrates and the other finds it done.
    private static func migrate(_ database: any DatabaseWriter, upgrade: DurableTimers.SchemaUpgrade, path: String) throws {
        let store = "the SQLite database at \(path)"
        if upgrade == .verifyOnly {
            _ = try database.read { db in try SchemaVersions.steps(from: found(db), upgrade: .verifyOnly, store: store) }
            return
        }
        try database.writeWithoutTransaction { db in
            try db.inTransaction(.immediate) {
                let found = try found(db)
                guard let steps = try SchemaVersions.steps(from: found, upgrade: .automatic, store: store) else { return .commit }
                let now = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
                for version in steps { try db.execute(sql: migrations[version] ?? "") }
                if steps.lowerBound == 2 {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO timerkit_schema (version, summary, applied_at, applied_by) VALUES (1, ?, \(now), ?)",
                        arguments: [SchemaVersions.summaries[1], SchemaVersions.adopted])
                }
                for version in steps {
                    try db.execute(
                        sql: "INSERT INTO timerkit_schema (version, summary, applied_at, applied_by) VALUES (?, ?, \(now), ?)",
                        arguments: [version, SchemaVersions.summaries[version], SchemaVersions.release])
                }
                return .commit
            }
        }
    }

    /// What the file holds of TimerKit's tables.
    static func found(_ db: Database) throws -> SchemaVersions.Found {
        if try db.tableExists("timerkit_schema") {
            // Read as a raw value: a version that is not an integer is an error, never a trap.
            guard let value = try DatabaseValue.fetchOne(db, sql: "SELECT max(version) FROM timerkit_schema"), !value.isNull else { return .version(0) }
            guard let version = Int.fromDatabaseValue(value) else {
                throw DurableTimerError.schema(reason: "timerkit_schema holds a version that is not a whole number (\(value)); restore the file from a backup")
            }
            return .version(version)
        }
        guard try db.tableExists("timerkit_timers") else { return .empty }
        return .unversioned(columns: try db.columns(in: "timerkit_timers").map(\.name))
    }

    /// The migrations by version: each takes the file from the version before to its own.
    static let migrations = [
        1: """
        CREATE TABLE IF NOT EXISTS timerkit_timers (
            namespace TEXT NOT NULL,
            key TEXT NOT NULL,
            handler TEXT NOT NULL,
            payload BLOB NOT NULL,
            interval_ns INTEGER,
            rule TEXT,
            misfire TEXT NOT NULL,
            due_ns INTEGER NOT NULL,
            ready_at_ns INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            fire_count INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            skipped INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            parked INTEGER NOT NULL DEFAULT 0,
            owner TEXT,
            lease_until_ns INTEGER,
            PRIMARY KEY (namespace, key)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS timerkit_timers_ready ON timerkit_timers (namespace, parked, ready_at_ns, key);
        CREATE TABLE IF NOT EXISTS timerkit_sequence (id INTEGER PRIMARY KEY CHECK (id = 0), next INTEGER NOT NULL);
        INSERT OR IGNORE INTO timerkit_sequence (id, next) VALUES (0, 1);
        """,
        2: """
        CREATE TABLE IF NOT EXISTS timerkit_schema (
            version INTEGER PRIMARY KEY,
            summary TEXT NOT NULL,
            applied_at TEXT NOT NULL,
            applied_by TEXT NOT NULL
        );
        """,
        // PostgreSQL's version 3 (the sweep's function, autovacuum settings) has no SQLite
        // counterpart: SQLite's planner walks the ready index for the sweep as it is.
        3: "",
        4: """
        ALTER TABLE timerkit_timers ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE IF NOT EXISTS timerkit_runs (
            namespace TEXT NOT NULL,
            key TEXT NOT NULL,
            started_ns INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            handler TEXT NOT NULL,
            due_ns INTEGER NOT NULL,
            ended_ns INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            instance TEXT NOT NULL,
            error TEXT,
            PRIMARY KEY (namespace, key, started_ns, sequence, attempt)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS timerkit_runs_ended ON timerkit_runs (namespace, ended_ns);
        CREATE TABLE IF NOT EXISTS timerkit_instances (
            namespace TEXT NOT NULL,
            id TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            handlers TEXT NOT NULL,
            started_ns INTEGER NOT NULL,
            seen_ns INTEGER NOT NULL,
            interval_ns INTEGER NOT NULL,
            PRIMARY KEY (namespace, id)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS timerkit_pauses (
            namespace TEXT NOT NULL,
            handler TEXT NOT NULL,
            since_ns INTEGER NOT NULL,
            PRIMARY KEY (namespace, handler)
        ) WITHOUT ROWID;
        """,
        5: "ALTER TABLE timerkit_timers ADD COLUMN trace_context TEXT;"
    ]

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

    func move(namespace: String, key: String, due: Int64, readyAt: Int64) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await write { db in try Self.move(namespace: namespace, key: key, due: due, readyAt: readyAt, db) }
    }

    /// One move, in `db`'s transaction.
    static func move(namespace: String, key: String, due: Int64, readyAt: Int64, _ db: Database) throws -> DurableTimerRecord? {
        try db.row(
            """
            UPDATE timerkit_timers SET due_ns = ?, ready_at_ns = ?, sequence = ?, attempts = 0, skipped = 0, last_error = NULL,
                \(Self.dialect.unparkAssignments)
            WHERE namespace = ? AND key = ? AND owner IS NULL
            RETURNING *
            """, [due, readyAt, try nextSequence(db), namespace, key]
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

    // MARK: Reading

    func record(namespace: String, key: String) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await read { db in
            try db.row("SELECT * FROM timerkit_timers WHERE namespace = ? AND key = ?", [namespace, key]).map { Self.record($0) }
        }
    }

    func records(namespace: String, after cursor: DurableTimerCursor?, limit: Int) async throws(DurableTimerError) -> [DurableTimerRecord] {
        try await read { db in
            let (condition, arguments) = Self.after(cursor)
            return try db.rows(
                "SELECT * FROM timerkit_timers WHERE namespace = ? \(condition) ORDER BY ready_at_ns, key LIMIT ?", [namespace] + arguments + [limit]
            ).map { Self.record($0) }
        }
    }

    func query(namespace: String, _ filter: DurableTimerFilter, now: Int64, afterKey: String?, limit: Int) async throws(DurableTimerError)
        -> [DurableTimerRecord]
    {
        let (conditions, values) = filter.whereClause(namespace: namespace, now: now, afterKey: afterKey, dialect: .sqlite)
        var arguments = StatementArguments()
        for value in values {
            switch value {
            case .text(let text): _ = arguments.append(contentsOf: [text])
            case .integer(let integer): _ = arguments.append(contentsOf: [integer])
            }
        }
        _ = arguments.append(contentsOf: [limit])
        return try await read { db in
            try db.rows("SELECT * FROM timerkit_timers WHERE \(conditions) ORDER BY key LIMIT ?\(values.count + 1)", arguments).map { Self.record($0) }
        }
    }

    func ready(namespace: String, by: Int64, handlers: [String], after cursor: DurableTimerCursor?, limit: Int) async throws(DurableTimerError)
        -> [DurableReadyTimer]
    {
        guard !handlers.isEmpty else { return [] }
        return try await read { db in
            let (condition, arguments) = Self.after(cursor)
            let names = Array(repeating: "?", count: handlers.count).joined(separator: ", ")
            return try db.rows(
                """
                SELECT key, ready_at_ns, handler FROM timerkit_timers
                WHERE namespace = ? AND parked = 0 AND ready_at_ns <= ? \(condition) AND handler IN (\(names))
                ORDER BY ready_at_ns, key LIMIT ?
                """, [namespace, by] + arguments + StatementArguments(handlers) + [limit]
            ).map { row in
                var reader = SQLiteRowReader(row: row)
                return DurableReadyTimer(key: reader.text("key"), readyAt: reader.integer("ready_at_ns"), handler: reader.text("handler"))
            }
        }
    }

    func orphans(namespace: String, handlers: [String], limit: Int) async throws(DurableTimerError) -> [DurableTimerRecord] {
        try await read { db in
            let names = handlers.isEmpty ? "" : "AND handler NOT IN (\(Array(repeating: "?", count: handlers.count).joined(separator: ", ")))"
            return try db.rows(
                "SELECT * FROM timerkit_timers WHERE namespace = ? \(names) ORDER BY key LIMIT ?", [namespace] + StatementArguments(handlers) + [limit]
            ).map { Self.record($0) }
        }
    }

    func count(namespace: String) async throws(DurableTimerError) -> Int {
        try await read { db in try db.value("SELECT count(*) FROM timerkit_timers WHERE namespace = ?", [namespace]) ?? 0 }
    }

    /// SQLite decides with the runner's clock.
    var clockOffset: Int64 { 0 }

    /// SQLite has no channel for other processes' writes: they are seen at the next load.
    func changes(namespace: String) -> AsyncStream<DurableTimerChange>? { nil }

    /// GRDB closes the file when the store is released.
    func close() async {}

    // MARK: Plumbing

    private static func after(_ cursor: DurableTimerCursor?) -> (String, StatementArguments) {
        guard let cursor else { return ("", []) }
        return ("AND (ready_at_ns, key) > (?, ?)", [cursor.readyAt, cursor.key])
    }

    /// A row as a record, whatever it holds: a value of the wrong type, an unknown misfire policy or
    /// rule form (written by hand, or by a newer version) is a ``DurableTimerRecord/defect``, which
    /// the runner parks the timer for. Reading a row never throws and never traps.
    static func record(_ row: Row) -> DurableTimerRecord {
        var reader = SQLiteRowReader(row: row)
        let key = reader.text("key")
        let misfireText = reader.text("misfire")
        let misfire = StoredForms.misfire(from: misfireText)
        if misfire == nil { reader.defects.append("the misfire policy '\(misfireText)' is unknown") }
        let recurrence = StoredForms.recurrence(interval: reader.optionalInteger("interval_ns"), rule: reader.optionalText("rule"))
        if recurrence == nil { reader.defects.append("its calendar rule is in a form this version cannot read") }
        var record = DurableTimerRecord(
            namespace: reader.text("namespace"), key: key, handler: reader.text("handler"), payload: reader.blob("payload"), recurrence: recurrence ?? .none,
            misfire: misfire ?? .once, due: reader.integer("due_ns"))
        record.readyAt = reader.integer("ready_at_ns")
        record.sequence = reader.integer("sequence")
        record.fireCount = reader.integer("fire_count")
        record.attempts = Int(clamping: reader.integer("attempts"))
        record.skipped = Int(clamping: reader.integer("skipped"))
        record.lastError = reader.optionalText("last_error")
        record.isParked = reader.integer("parked") != 0
        record.isPaused = reader.integer("paused") != 0
        record.owner = reader.optionalText("owner")
        record.leaseUntil = reader.optionalInteger("lease_until_ns")
        // A context that does not read is no defect: the timer runs, in a trace of its own.
        var lenient = SQLiteRowReader(row: row)
        record.traceContext = StoredForms.traceContext(from: lenient.optionalText("trace_context"))
        if !reader.defects.isEmpty { record.defect = reader.defects.joined(separator: "; ") }
        return record
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction on the store's executor.
    func write<T>(_ body: (Database) throws -> T) async throws(DurableTimerError) -> T {
        try await withTaskExecutorPreference(executor) { () throws(DurableTimerError) -> T in
            do {
                return try database.writeWithoutTransaction { db in
                    var result: T?
                    try db.inTransaction(.immediate) {
                        result = try body(db)
                        return .commit
                    }
                    return result!
                }
            } catch {
                throw Self.mapped(error, path: path, opening: false)
            }
        }
    }

    func read<T>(_ body: (Database) throws -> T) async throws(DurableTimerError) -> T {
        try await withTaskExecutorPreference(executor) { () throws(DurableTimerError) -> T in
            do {
                return try database.read(body)
            } catch {
                throw Self.mapped(error, path: path, opening: false)
            }
        }
    }

    /// A store failure as a ``DurableTimerError``.
    static func mapped(_ error: any Error, path: String, opening: Bool) -> DurableTimerError {
        if let error = error as? DurableTimerError { return error }
        guard let error = error as? DatabaseError else { return .store(reason: "\(error)") }
        let reason = error.message ?? "\(error.resultCode)"
        switch error.resultCode.primaryResultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .locked(reason: reason)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .corrupt(path: path, reason: reason)
        case .SQLITE_FULL: return .full(reason: reason)
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH: return .cannotOpen(path: path, reason: reason)
        default: return opening ? .cannotOpen(path: path, reason: reason) : .store(reason: reason)
        }
    }
}

extension Database {
    /// Runs `sql` through the connection's statement cache: compiled once, reused by every call.
    func run(_ sql: String, _ arguments: StatementArguments) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }

    func row(_ sql: String, _ arguments: StatementArguments) throws -> Row? {
        try Row.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }

    func rows(_ sql: String, _ arguments: StatementArguments) throws -> [Row] {
        try Row.fetchAll(cachedStatement(sql: sql), arguments: arguments)
    }

    func value<Value: DatabaseValueConvertible & StatementColumnConvertible>(_ sql: String, _ arguments: StatementArguments) throws -> Value? {
        try Value.fetchOne(cachedStatement(sql: sql), arguments: arguments)
    }
}
