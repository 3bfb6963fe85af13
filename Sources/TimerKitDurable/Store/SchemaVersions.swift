/// The versions of the stores' schema, and what a store does about the version it finds.
///
/// 1. The schema of 0.1.0, which recorded no version: `timerkit_timers` and its index, and the
///    occurrence sequence.
/// 2. The version is recorded, in `timerkit_schema` (one row per migration applied: version,
///    what it did, when, by which release). A table of TimerKit's own rather than SQLite's
///    `user_version`: the file may be the application's database, whose `user_version` is the
///    application's.
/// 3. PostgreSQL: the sweep's function `timerkit_sweep` (the next ready rows in the ready index's
///    order, whatever the table's statistics), and autovacuum settings of the timers' table that
///    follow its churn. SQLite: nothing (recorded, so that both stores count alike).
/// 4. Operating: the run history (`timerkit_runs`), the instances alive (`timerkit_instances`),
///    pauses of a handler or the namespace (`timerkit_pauses`), and the timers' `paused` column
///    (0: not paused; 1: paused; 2: paused while parked). A paused timer is also marked parked,
///    so that every claim statement passes it by unchanged.
/// 5. Tracing: the timers' `trace_context` column, the propagation headers of the span that
///    scheduled the timer (``DurableTimerInstrumentation``), as a JSON object; NULL for none.
/// 6. PostgreSQL: the statements of every fire as functions with planner settings
///    (`timerkit_claim_keys`, `timerkit_finish_all`, `timerkit_renew`): one probe of the primary
///    key per key, whatever the table's statistics. SQLite: nothing.
/// 7. The run history's index by start (`timerkit_runs_started`), which the statistics read.
///    PostgreSQL: also the timers' `skipped` column as `bigint`, as the runner counts (a repeating
///    timer with a tiny interval skips more than 2^31 occurrences in a long outage); the change
///    rewrites the table under an exclusive lock. SQLite's integers are 64-bit already. And the
///    removal of one-shots that ran as `timerkit_finish_runs`, each run bound beside its key.
///
/// A store reads what it finds (``Found``), asks ``steps(from:upgrade:store:)`` what to do, and
/// applies the steps in one transaction behind its lock (the SQLite write lock, a PostgreSQL
/// advisory lock), reading the version again inside it: of several processes starting at once,
/// one migrates and the others find the work done.
package enum SchemaVersions {
    /// The version this build reads and writes.
    package static let current = 7

    /// The release that writes ``current``, recorded beside each migration it applies (the work
    /// toward 0.2.0 until it is tagged).
    package static let release = "TimerKit 0.2.0-dev"

    /// What each version brought, recorded in `timerkit_schema`.
    package static let summaries = [
        1: "timers (timerkit_timers), their ready index and the occurrence sequence: the schema of 0.1.0",
        2: "the schema's version, recorded in timerkit_schema",
        3: "PostgreSQL: the sweep's function timerkit_sweep and the timers' autovacuum settings; SQLite: no change",
        4: "operating: run history (timerkit_runs), instances (timerkit_instances), pauses (timerkit_pauses) and the timers' paused column",
        5: "tracing: the timers' trace_context column (the scheduling span's propagation headers)",
        6: "PostgreSQL: the claim, removal and renewal functions (timerkit_claim_keys, timerkit_finish_all, timerkit_renew); SQLite: no change",
        7: "the history's index by start; PostgreSQL: skipped as bigint, and the removal function timerkit_finish_runs"
    ]

    /// Who is recorded as having applied version 1 when it was found without a record.
    package static let adopted = "TimerKit 0.1.0 (found without a version record, recorded on upgrade)"

    /// What a store found in its database.
    package enum Found: Sendable, Equatable {
        /// No TimerKit table.
        case empty
        /// A `timerkit_timers` table but no version table: 0.1.0's schema when its columns are
        /// that release's, someone else's table otherwise.
        case unversioned(columns: [String])
        /// The highest version recorded.
        case version(Int)
    }

    /// The columns of `timerkit_timers` in 0.1.0 (and since), in order: an unversioned table with
    /// exactly these is adopted as version 1.
    package static let timerColumns = [
        "namespace", "key", "handler", "payload", "interval_ns", "rule", "misfire", "due_ns", "ready_at_ns", "sequence", "fire_count", "attempts",
        "skipped", "last_error", "parked", "owner", "lease_until_ns"
    ]

    /// The version a finding stands for.
    /// - Throws: ``DurableTimerError/schema(reason:)`` for a `timerkit_timers` table that TimerKit
    ///   did not make.
    package static func version(of found: Found, store: String) throws(DurableTimerError) -> Int {
        switch found {
        case .empty: return 0
        case .version(let version): return version
        case .unversioned(let columns):
            guard columns == timerColumns else {
                throw .schema(
                    reason:
                        "\(store) has a table named timerkit_timers that TimerKit did not make (its columns: \(columns.joined(separator: ", "))); "
                        + "rename or drop it, or use another database")
            }
            return 1
        }
    }

    /// The versions to apply, in order (empty when the database is current).
    /// - Throws: ``DurableTimerError/schema(reason:)`` when the database is newer than this
    ///   build, or older with ``DurableTimers/SchemaUpgrade/verifyOnly``.
    package static func steps(from found: Found, upgrade: DurableTimers.SchemaUpgrade, store: String) throws(DurableTimerError) -> ClosedRange<Int>? {
        let version = try version(of: found, store: store)
        if version > current {
            throw .schema(
                reason:
                    "\(store) is at schema version \(version), and this build of TimerKit knows versions up to \(current): a newer release wrote it; "
                    + "run that release (TimerKit never downgrades a schema)")
        }
        guard version < current else { return nil }
        if upgrade == .verifyOnly {
            let what = version == 0 ? "has no TimerKit tables" : "is at schema version \(version)"
            throw .schema(
                reason:
                    "\(store) \(what), and this build needs version \(current); the runner was told not to change the schema (SchemaUpgrade.verifyOnly): "
                    + "apply the migrations with a role that may (DurableTimers.migrate, or the SQL of DurableTimers.postgresSchemaSQL(from: \(version)))")
        }
        return (version + 1)...current
    }
}
