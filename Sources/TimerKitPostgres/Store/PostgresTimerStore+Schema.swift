import Logging
import PostgresNIO
import TimerKitDurable

extension PostgresTimerStore {
    /// The advisory lock that serializes migrations across instances (transaction-scoped).
    static let migrationLock: Int64 = 7_412_193_650

    /// Brings the database's schema to ``SchemaVersions/current``, or checks that it is there
    /// (``DurableTimers/SchemaUpgrade/verifyOnly``). The version is read first without a lock, so
    /// that instances of a current database (the usual start) take none and need no privilege
    /// beyond reading `timerkit_schema`; when it is behind, the version is read again and the
    /// migrations applied in one transaction behind an advisory lock: of many instances starting
    /// at once, one migrates and the others find the work done.
    /// - Returns: The versions applied, `nil` when none were needed.
    func migrate(_ upgrade: DurableTimers.SchemaUpgrade) async throws(DurableTimerError) -> ClosedRange<Int>? {
        let store = "the PostgreSQL database \(configuration.database ?? "(the role's default)")"
        let found = try await call(opening: true) { connection, logger in try await Self.found(connection, logger: logger) }
        // A table without the version table, read without the lock, may be another instance's
        // migration caught between its statements: decided under the lock, on a second reading.
        let needed: ClosedRange<Int>
        if case .unversioned = found {
            needed = 1...SchemaVersions.current
        } else {
            guard let steps = try SchemaVersions.steps(from: found, upgrade: upgrade, store: store) else { return nil }
            needed = steps
        }
        do {
            return try await apply(upgrade, store: store)
        } catch .store(let reason) where reason.hasSuffix("(42501)") {
            throw .schema(
                reason:
                    "\(store) is at schema version \(needed.lowerBound - 1) and this build needs \(SchemaVersions.current), but this role may not change "
                    + "the schema (\(reason)): apply the migrations with a role that may (DurableTimers.migrate, or the SQL of "
                    + "DurableTimers.postgresSchemaSQL(from: \(needed.lowerBound - 1))), and start with SchemaUpgrade.verifyOnly")
        }
    }

    /// Applies the missing migrations in one transaction behind the migration lock.
    private func apply(_ upgrade: DurableTimers.SchemaUpgrade, store: String) async throws(DurableTimerError) -> ClosedRange<Int>? {
        try await call(opening: true) { connection, logger in
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
                guard let steps = try SchemaVersions.steps(from: try await Self.found(connection, logger: logger), upgrade: upgrade, store: store) else {
                    return nil
                }
                for statement in Self.statements(for: steps) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                return steps
            }
        }
    }

    /// What the database holds of TimerKit's tables (in the schemas of the search path).
    static func found(_ connection: PostgresConnection, logger: Logger) async throws -> SchemaVersions.Found {
        // One scan of pg_class under the statement's snapshot: two to_regclass calls read the
        // catalog separately, and one made just after another instance's migration committed saw
        // the timers' table without the version table (both created in that one transaction).
        let rows = try await connection.query(
            """
            SELECT coalesce(bool_or(relname = 'timerkit_schema'), false), coalesce(bool_or(relname = 'timerkit_timers'), false)
            FROM pg_class WHERE relname IN ('timerkit_schema', 'timerkit_timers') AND relkind IN ('r', 'p') AND pg_table_is_visible(oid)
            """, logger: logger)
        var (versioned, timers) = (false, false)
        for try await (schema, table) in rows.decode((Bool, Bool).self) { (versioned, timers) = (schema, table) }
        if versioned {
            var version = 0
            for try await value in try await connection.query("SELECT coalesce(max(version), 0) FROM timerkit_schema", logger: logger).decode(Int.self) {
                version = value
            }
            return .version(version)
        }
        guard timers else { return .empty }
        var columns: [String] = []
        let names = try await connection.query(
            """
            SELECT attname::text FROM pg_attribute
            WHERE attrelid = to_regclass('timerkit_timers') AND attnum > 0 AND NOT attisdropped ORDER BY attnum
            """, logger: logger)
        for try await name in names.decode(String.self) { columns.append(name) }
        return .unversioned(columns: columns)
    }

    /// The statements that apply `versions`, recording each in `timerkit_schema` (and version 1,
    /// found unrecorded, when the first step is 2). Every statement can run again.
    static func statements(for versions: ClosedRange<Int>) -> [String] {
        var statements = versions.flatMap { migrations[$0] ?? [] }
        func record(_ version: Int, by release: String) -> String {
            "INSERT INTO timerkit_schema (version, summary, applied_by) VALUES (\(version), \(literal(SchemaVersions.summaries[version] ?? "")), "
                + "\(literal(release))) ON CONFLICT (version) DO NOTHING"
        }
        if versions.lowerBound == 2 { statements.append(record(1, by: SchemaVersions.adopted)) }
        statements += versions.map { record($0, by: SchemaVersions.release) }
        return statements
    }

    /// `text` as a SQL string literal.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// The migrations by version, statement by statement: each takes the database from the
    /// version before to its own.
    static let migrations = [
        1: [
            """
            CREATE TABLE IF NOT EXISTS timerkit_timers (
                namespace text NOT NULL,
                key text NOT NULL,
                handler text NOT NULL,
                payload bytea NOT NULL,
                interval_ns bigint,
                rule text,
                misfire text NOT NULL,
                due_ns bigint NOT NULL,
                ready_at_ns bigint NOT NULL,
                sequence bigint NOT NULL,
                fire_count bigint NOT NULL DEFAULT 0,
                attempts integer NOT NULL DEFAULT 0,
                skipped integer NOT NULL DEFAULT 0,
                last_error text,
                parked boolean NOT NULL DEFAULT false,
                owner text,
                lease_until_ns bigint,
                PRIMARY KEY (namespace, key)
            )
            """,
            "CREATE INDEX IF NOT EXISTS timerkit_timers_ready ON timerkit_timers (namespace, ready_at_ns, key) WHERE NOT parked",
            "CREATE SEQUENCE IF NOT EXISTS timerkit_sequence",
            """
            CREATE OR REPLACE FUNCTION timerkit_now_ns() RETURNS bigint LANGUAGE sql VOLATILE AS
            $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint $$
            """
        ],
        2: [
            """
            CREATE TABLE IF NOT EXISTS timerkit_schema (
                version integer PRIMARY KEY,
                summary text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now(),
                applied_by text NOT NULL
            )
            """
        ],
        3: [
            // The sweep as a function, for the settings a function may carry: on a table whose
            // statistics predate a bulk load (never analyzed, or analyzed when it was small), the
            // planner takes the namespace for a few rows and sorts every ready one of them per
            // sweep (a cost that grows with the backlog); with sorts and bitmap scans off it walks
            // the ready index in order and stops at the limit, and with hash and merge joins off
            // it updates the rows it took by their primary key (analyzed or not, the planner took
            // the limit for a tenth of the table and hashed all of it).
            """
            CREATE OR REPLACE FUNCTION timerkit_sweep(
                p_namespace text, p_handlers text[], p_owner text, p_excluding text[], p_now bigint, p_lease bigint, p_limit integer
            ) RETURNS SETOF timerkit_timers LANGUAGE sql VOLATILE
            SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
            AS $$
                WITH c AS (SELECT coalesce(p_now, timerkit_now_ns()) AS ns),
                target AS (
                    SELECT t.namespace, t.key FROM timerkit_timers t
                    WHERE t.namespace = p_namespace AND NOT t.parked AND t.ready_at_ns <= (SELECT ns FROM c) AND t.handler = ANY(p_handlers)
                        AND (t.owner IS NULL OR t.owner <> ALL(p_excluding))
                    ORDER BY t.ready_at_ns, t.key LIMIT p_limit
                    FOR UPDATE OF t SKIP LOCKED
                )
                UPDATE timerkit_timers t SET owner = p_owner, lease_until_ns = c.ns + p_lease, ready_at_ns = c.ns + p_lease, attempts = t.attempts + 1
                FROM target, c WHERE t.namespace = target.namespace AND t.key = target.key
                RETURNING t.*
            $$
            """,
            // Every fire deletes or rewrites its row, and every claim rewrites the ready index's
            // entry (never a HOT update: the ready time is indexed): vacuum and analyze after 2 %
            // and 1 % of the rows changed (at least 1,000), not PostgreSQL's 20 % and 10 %, so that
            // a table that churns through a backlog is neither bloated nor planned on stale counts.
            """
            ALTER TABLE timerkit_timers SET (
                autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
                autovacuum_analyze_scale_factor = 0.01, autovacuum_analyze_threshold = 1000,
                autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_vacuum_insert_threshold = 1000
            )
            """
        ],
        4: [
            // A paused timer is parked too (so every claim, and the ready index, pass it by); the
            // column says it is paused, and whether it was parked before (2).
            "ALTER TABLE timerkit_timers ADD COLUMN IF NOT EXISTS paused smallint NOT NULL DEFAULT 0",
            """
            CREATE TABLE IF NOT EXISTS timerkit_runs (
                namespace text NOT NULL,
                key text NOT NULL,
                started_ns bigint NOT NULL,
                sequence bigint NOT NULL,
                attempt integer NOT NULL,
                handler text NOT NULL,
                due_ns bigint NOT NULL,
                ended_ns bigint NOT NULL,
                outcome text NOT NULL,
                instance text NOT NULL,
                error text,
                PRIMARY KEY (namespace, key, started_ns, sequence, attempt)
            )
            """,
            "CREATE INDEX IF NOT EXISTS timerkit_runs_ended ON timerkit_runs (namespace, ended_ns)",
            """
            CREATE TABLE IF NOT EXISTS timerkit_instances (
                namespace text NOT NULL,
                id text NOT NULL,
                host text NOT NULL,
                pid bigint NOT NULL,
                handlers text NOT NULL,
                started_ns bigint NOT NULL,
                seen_ns bigint NOT NULL,
                interval_ns bigint NOT NULL,
                PRIMARY KEY (namespace, id)
            )
            """,
            """
            CREATE TABLE IF NOT EXISTS timerkit_pauses (
                namespace text NOT NULL,
                handler text NOT NULL,
                since_ns bigint NOT NULL,
                PRIMARY KEY (namespace, handler)
            )
            """
        ],
        // The scheduling span's propagation headers, as JSON text (read leniently: a value that
        // does not read runs the timer without a parent span).
        5: ["ALTER TABLE timerkit_timers ADD COLUMN IF NOT EXISTS trace_context text"],
        // The statements of every fire as functions, for the settings a function may carry (as
        // the sweep's): on a table planned on stale statistics (a fresh one, or one that grew
        // since it was analyzed) the planner took the namespace for a few rows, and each claim,
        // removal and renewal scanned all of it — 40 ms a claim of 24 keys on 18,000 index
        // entries, with one instance at 2,000 fires a second. With bitmap scans, sequential
        // scans, hash and merge joins off, each key is one probe of the primary key. The claim
        // compares `parked` with a value the planner cannot see (`p_owner IS NULL`, never true)
        // so that the ready index, whose predicate is `NOT parked`, is not a path: it offered a
        // range of every ready row per key.
        6: [
            """
            CREATE OR REPLACE FUNCTION timerkit_claim_keys(p_now bigint, p_keys text[], p_namespace text, p_owner text, p_lease bigint)
            RETURNS TABLE (timer timerkit_timers, claimed boolean, locked boolean) LANGUAGE sql VOLATILE
            SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
            AS $$
                WITH c AS (SELECT coalesce(p_now, timerkit_now_ns()) AS ns),
                wanted AS (SELECT DISTINCT w.key FROM unnest(p_keys) AS w(key)),
                target AS (
                    SELECT l.key FROM wanted CROSS JOIN LATERAL (
                        SELECT t.key FROM timerkit_timers t
                        WHERE t.namespace = p_namespace AND t.key = wanted.key AND t.parked = (p_owner IS NULL)
                            AND t.ready_at_ns <= (SELECT ns FROM c)
                        FOR UPDATE SKIP LOCKED
                    ) AS l
                ),
                claimed AS (
                    UPDATE timerkit_timers t SET owner = p_owner, lease_until_ns = c.ns + p_lease, ready_at_ns = c.ns + p_lease, attempts = t.attempts + 1
                    FROM target, c WHERE t.namespace = p_namespace AND t.key = target.key
                    RETURNING t.*
                )
                SELECT claimed::timerkit_timers, true, false FROM claimed
                UNION ALL
                SELECT l.row, false, (l.row).ready_at_ns <= (SELECT ns FROM c) FROM wanted CROSS JOIN LATERAL (
                    SELECT t AS row FROM timerkit_timers t
                    WHERE t.namespace = p_namespace AND t.key = wanted.key AND t.parked = (p_owner IS NULL) LIMIT 1
                ) AS l
                WHERE wanted.key NOT IN (SELECT key FROM claimed)
            $$
            """,
            """
            CREATE OR REPLACE FUNCTION timerkit_finish_all(
                p_keys text[], p_owners text[], p_sequences bigint[], p_namespace text, r_keys text[], r_started bigint[], r_sequences bigint[],
                r_attempts integer[], r_handlers text[], r_due bigint[], r_ended bigint[], r_outcomes text[], r_instances text[], r_errors text[]
            ) RETURNS SETOF text LANGUAGE sql VOLATILE
            SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
            AS $$
                WITH removed AS (
                    DELETE FROM timerkit_timers t USING unnest(p_keys, p_owners, p_sequences) AS d(key, owner, sequence)
                    WHERE t.namespace = p_namespace AND t.key = d.key AND t.owner = d.owner AND t.sequence = d.sequence
                    RETURNING t.key
                ),
                recorded AS (
                    INSERT INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
                    SELECT p_namespace, r.k, r.s, r.q, r.a, r.h, r.d, r.e, r.o, r.i, nullif(r.x, chr(1))
                    FROM unnest(r_keys, r_started, r_sequences, r_attempts, r_handlers, r_due, r_ended, r_outcomes, r_instances, r_errors)
                        AS r(k, s, q, a, h, d, e, o, i, x)
                    JOIN removed ON removed.key = r.k
                    ON CONFLICT DO NOTHING
                )
                SELECT key FROM removed
            $$
            """,
            """
            CREATE OR REPLACE FUNCTION timerkit_renew(p_now bigint, p_lease bigint, p_keys text[], p_owners text[], p_sequences bigint[], p_namespace text)
            RETURNS SETOF text LANGUAGE sql VOLATILE
            SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
            AS $$
                WITH c AS (SELECT coalesce(p_now, timerkit_now_ns()) AS ns)
                UPDATE timerkit_timers t SET lease_until_ns = c.ns + p_lease, ready_at_ns = c.ns + p_lease
                FROM c, unnest(p_keys, p_owners, p_sequences) AS h(key, owner, sequence)
                WHERE t.namespace = p_namespace AND t.key = h.key AND t.owner = h.owner AND t.sequence = h.sequence
                RETURNING t.key
            $$
            """
        ],
        // The runner counts skipped occurrences in 64 bits: a `.skip` timer of a millisecond
        // down for a month skips 2.6 billion, past `integer`, and its advance failed for ever.
        // The statistics read the recent runs by their start: an index for them (they scanned
        // the namespace's whole history every five seconds on the dashboard).
        // The removal of one-shots that ran takes each run beside its key, and records the runs
        // of the rows it deleted from what the deletion returns. Version 6's function joined its
        // runs to the deleted rows, and with hash joins off that join compared every pair: 26 ms
        // a call at 377 rows, so a backlog's removals fell behind and grew (version 6's
        // function stays, for instances of that release during an upgrade).
        7: [
            "ALTER TABLE timerkit_timers ALTER COLUMN skipped TYPE bigint",
            "CREATE INDEX IF NOT EXISTS timerkit_runs_started ON timerkit_runs (namespace, started_ns)",
            """
            CREATE OR REPLACE FUNCTION timerkit_finish_runs(
                p_keys text[], p_owners text[], p_sequences bigint[], p_namespace text, r_started bigint[], r_sequences bigint[],
                r_attempts integer[], r_handlers text[], r_due bigint[], r_ended bigint[], r_outcomes text[], r_instances text[], r_errors text[]
            ) RETURNS SETOF text LANGUAGE sql VOLATILE
            SET enable_bitmapscan = off SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
            AS $$
                WITH removed AS (
                    DELETE FROM timerkit_timers t
                    USING unnest(p_keys, p_owners, p_sequences, r_started, r_sequences, r_attempts, r_handlers, r_due, r_ended, r_outcomes, r_instances, r_errors)
                        AS d(key, owner, sequence, s, q, a, h, du, e, o, i, x)
                    WHERE t.namespace = p_namespace AND t.key = d.key AND t.owner = d.owner AND t.sequence = d.sequence
                    RETURNING t.key, d.s, d.q, d.a, d.h, d.du, d.e, d.o, d.i, d.x
                ),
                recorded AS (
                    INSERT INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
                    SELECT p_namespace, r.key, r.s, r.q, r.a, r.h, r.du, r.e, r.o, r.i, nullif(r.x, chr(1))
                    FROM removed AS r WHERE r.o <> ''
                    ON CONFLICT DO NOTHING
                )
                SELECT key FROM removed
            $$
            """
        ]
    ]

    /// A script a DBA can run (psql, a migration tool) to bring a database at `version` to
    /// ``SchemaVersions/current``: one transaction behind the runners' migration lock.
    static func script(from version: Int) -> String {
        var lines = [
            "-- TimerKit's PostgreSQL schema: version \(max(version, 0)) to \(SchemaVersions.current) (\(SchemaVersions.release)).",
            "-- Every statement can run again. Run it as a role that may create tables in the schema of the search path.",
            "BEGIN;",
            "SELECT pg_advisory_xact_lock(\(migrationLock));"
        ]
        if version < SchemaVersions.current { lines += statements(for: max(version + 1, 1)...SchemaVersions.current).map { $0 + ";" } }
        lines.append("COMMIT;")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The grants an application role needs to run timers on a migrated database (and nothing
    /// more: no DDL).
    static func grants(to role: String) -> String {
        let role = "\"" + role.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        return [
            "GRANT SELECT, INSERT, UPDATE, DELETE ON timerkit_timers TO \(role);",
            "GRANT SELECT ON timerkit_schema TO \(role);",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON timerkit_runs, timerkit_instances, timerkit_pauses TO \(role);",
            "GRANT USAGE ON SEQUENCE timerkit_sequence TO \(role);",
            "GRANT EXECUTE ON FUNCTION timerkit_now_ns() TO \(role);",
            "GRANT EXECUTE ON FUNCTION timerkit_sweep(text, text[], text, text[], bigint, bigint, integer) TO \(role);"
        ].joined(separator: "\n") + "\n"
    }
}
