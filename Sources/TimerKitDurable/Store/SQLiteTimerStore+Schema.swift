import Foundation
import GRDB

// The schema of a SQLite file: its migrations, from the first release's on, and how a file's
// version is read.
extension SQLiteTimerStore {
    /// Brings the file's schema to ``SchemaVersions/current``, or checks that it is there
    /// (``DurableTimers/SchemaUpgrade/verifyOnly``): the version is read, and the migrations
    /// applied, inside one `BEGIN IMMEDIATE` transaction, so of two processes opening the file at
    /// once one migrates and the other finds it done.
    static func migrate(_ database: any DatabaseWriter, upgrade: DurableTimers.SchemaUpgrade, path: String) throws {
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
        5: "ALTER TABLE timerkit_timers ADD COLUMN trace_context TEXT;",
        6: "",
        7: "CREATE INDEX IF NOT EXISTS timerkit_runs_started ON timerkit_runs (namespace, started_ns);"
    ]
}
