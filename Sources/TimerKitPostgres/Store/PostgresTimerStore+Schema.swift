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
        guard let needed = try SchemaVersions.steps(from: found, upgrade: upgrade, store: store) else { return nil }
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
        let rows = try await connection.query(
            "SELECT to_regclass('timerkit_schema') IS NOT NULL, to_regclass('timerkit_timers') IS NOT NULL", logger: logger)
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
            "GRANT USAGE ON SEQUENCE timerkit_sequence TO \(role);",
            "GRANT EXECUTE ON FUNCTION timerkit_now_ns() TO \(role);"
        ].joined(separator: "\n") + "\n"
    }
}
