import Foundation
import PostgresNIO
import TimerKitDurable

// The statements of every fire — the claim of woken keys, the sweep, the removal of one-shots
// that ran — and the single schedule, as prepared statements: each connection parses them once.
// The claim, the sweep and the removal call functions of the schema, whose bodies PostgreSQL
// plans at each call under the planner settings they carry. Their shapes are fixed; what
// varies is bound.

extension PostgresTimerStore {
    /// Claims the woken keys that are ready (see ``claim(namespace:keys:owner:now:leaseUntil:)``):
    /// each claimed row, and each other key still stored and not parked with its ready time.
    struct ClaimKeys: PostgresPreparedStatement {
        static let name = "timerkit_claim_keys_v6"
        // Schema version 6's function: a probe of the primary key per key whatever the table's
        // statistics (its planner settings are the point: see there). Each key is looked up
        // alone, never joined with the namespace.
        static let sql = "SELECT \(columns(prefix: "(r.timer).")), r.claimed, r.locked FROM timerkit_claim_keys($1, $2, $3, $4, $5) AS r"
        static let bindingDataTypes: [PostgresDataType] = [.int8, .textArray, .text, .text, .int8]

        var now: Int64?
        var keys: [String]
        var namespace: String
        var owner: String
        var lease: Int64

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(now)
            bindings.append(keys)
            bindings.append(namespace)
            bindings.append(owner)
            bindings.append(lease)
            return bindings
        }

        /// The record (``PostgresTimerStore/record(_:)`` reads the leading columns); whether this
        /// claim took it; whether it was ready but locked (another runner's claim of it was under
        /// way: `SKIP LOCKED` passed it by).
        func decodeRow(_ row: PostgresRow) throws -> (record: DurableTimerRecord, claimed: Bool, locked: Bool) {
            let cells = row.makeRandomAccess()
            return (PostgresTimerStore.record(row), try cells[cells.count - 2].decode(Bool.self), try cells[cells.count - 1].decode(Bool.self))
        }
    }

    /// The next ready rows of a backlog, through schema version 3's `timerkit_sweep`.
    struct Sweep: PostgresPreparedStatement {
        static let name = "timerkit_sweep_v5"
        static let sql = "SELECT \(allColumns) FROM timerkit_sweep($1, $2, $3, $4, $5, $6, $7)"
        static let bindingDataTypes: [PostgresDataType] = [.text, .textArray, .text, .textArray, .int8, .int8, .int4]

        var namespace: String
        var handlers: [String]
        var owner: String
        var excluding: [String]
        var now: Int64?
        var lease: Int64
        var limit: Int32

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 7)
            bindings.append(namespace)
            bindings.append(handlers)
            bindings.append(owner)
            bindings.append(excluding)
            bindings.append(now)
            bindings.append(lease)
            bindings.append(limit)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> DurableTimerRecord { PostgresTimerStore.record(row) }
    }

    /// Removes the one-shots that ran, each if its claim still holds it.
    struct FinishAll: PostgresPreparedStatement {
        static let name = "timerkit_finish_runs_v7"
        // Schema version 7's function. The runs of the one-shots removed are recorded by the same
        // statement: a reader never sees a finished one-shot gone without its run, and a crash
        // cannot keep one without the other. Each run is bound beside its key (an empty outcome
        // for none), so the function records what its deletion returns, with no join.
        static let sql = "SELECT timerkit_finish_runs($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        static let bindingDataTypes: [PostgresDataType] = [
            .textArray, .textArray, .int8Array, .text, .int8Array, .int8Array, .int4Array, .textArray, .int8Array, .int8Array, .textArray,
            .textArray, .textArray
        ]

        var keys: [String]
        var owners: [String]
        var sequences: [Int64]
        var namespace: String
        /// The run to record for each key, or `nil` (none, or history is off).
        var runs: [DurableTimerRun?]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 13)
            bindings.append(keys)
            bindings.append(owners)
            bindings.append(sequences)
            bindings.append(namespace)
            bindings.append(runs.map { $0?.startedNanoseconds ?? 0 })
            bindings.append(runs.map { $0?.sequence ?? 0 })
            bindings.append(runs.map { Int32(clamping: $0?.attempt ?? 0) })
            bindings.append(runs.map { $0?.handler ?? "" })
            bindings.append(runs.map { $0?.dueNanoseconds ?? 0 })
            bindings.append(runs.map { $0?.endedNanoseconds ?? 0 })
            bindings.append(runs.map { $0?.outcome.rawValue ?? "" })
            bindings.append(runs.map { $0?.instance ?? "" })
            bindings.append(runs.map { $0?.error ?? "\u{1}" })
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> String { try row.decode(String.self) }
    }

    /// One schedule: the row, and its notification when it is ready within the horizon. The
    /// conflict clause is the statement's shape (``PutReplace``, ``PutKeep``, ``PutFail``).
    static func putSQL(onConflict: String) -> String {
        """
        WITH written AS (
            INSERT INTO timerkit_timers (namespace, key, handler, payload, interval_ns, rule, misfire, due_ns, ready_at_ns, sequence, parked, paused, trace_context)
            VALUES ($1, $2, $3, convert_to($4, 'UTF8'), $5, $6, $7, $8, $8, nextval('timerkit_sequence'),
                EXISTS (SELECT 1 FROM timerkit_pauses z WHERE z.namespace = $1 AND z.handler IN ('', $3)),
                (CASE WHEN EXISTS (SELECT 1 FROM timerkit_pauses z WHERE z.namespace = $1 AND z.handler IN ('', $3)) THEN 1 ELSE 0 END)::smallint, $11)
            \(onConflict)
            RETURNING namespace, key, handler, ready_at_ns, paused
        ),
        notified AS (
            SELECT pg_notify($9, \(Notice.ready))
            FROM written WHERE ready_at_ns <= timerkit_now_ns() + $10 AND \(StoredPause.isNotPaused())
        )
        SELECT (SELECT count(*) FROM written), (SELECT count(*) FROM notified)
        """
    }

    /// The values of one schedule, bound in ``putSQL(onConflict:)``'s order.
    struct PutValues: Sendable {
        var record: DurableTimerRecord
        var channel: String
        var horizon: Int64

        func bindings() -> PostgresBindings {
            let (interval, rule) = StoredForms.columns(record.recurrence)
            var bindings = PostgresBindings(capacity: 11)
            bindings.append(record.namespace)
            bindings.append(record.key)
            bindings.append(record.handler)
            bindings.append(String(decoding: record.payload, as: UTF8.self))
            bindings.append(interval)
            bindings.append(rule)
            bindings.append(StoredForms.misfire(record.misfire))
            bindings.append(record.due)
            bindings.append(channel)
            bindings.append(horizon)
            bindings.append(StoredForms.traceContext(record.traceContext))
            return bindings
        }
    }

    /// A schedule's statement: its conflict clause is all that differs between the three.
    protocol PutStatement: PostgresPreparedStatement where Row == Int64 {
        var values: PutValues { get }
    }

    /// A schedule that replaces the timer under its key.
    struct PutReplace: PutStatement {
        static let name = "timerkit_put_replace_v5"
        static let sql = putSQL(onConflict: PostgresTimerStore.replaceClause)
        var values: PutValues
    }

    /// A schedule that keeps the timer under its key, if there is one.
    struct PutKeep: PutStatement {
        static let name = "timerkit_put_keep_v5"
        static let sql = putSQL(onConflict: "ON CONFLICT (namespace, key) DO NOTHING")
        var values: PutValues
    }

    /// A schedule that fails (unique violation) when the key is in use.
    struct PutFail: PutStatement {
        static let name = "timerkit_put_fail_v5"
        static let sql = putSQL(onConflict: "")
        var values: PutValues
    }

    /// `ON CONFLICT` for a schedule that replaces: a new occurrence, everything else cleared.
    static let replaceClause = """
        ON CONFLICT (namespace, key) DO UPDATE SET handler = excluded.handler, payload = excluded.payload,
            interval_ns = excluded.interval_ns, rule = excluded.rule, misfire = excluded.misfire, due_ns = excluded.due_ns,
            ready_at_ns = excluded.ready_at_ns, sequence = excluded.sequence, fire_count = 0, attempts = 0, skipped = 0,
            last_error = NULL, parked = excluded.parked, paused = excluded.paused, owner = NULL, lease_until_ns = NULL,
            trace_context = excluded.trace_context
        """
}

extension PostgresTimerStore.PutStatement {
    static var bindingDataTypes: [PostgresDataType] { [.text, .text, .text, .text, .int8, .text, .text, .int8, .text, .int8, .text] }
    func makeBindings() throws -> PostgresBindings { values.bindings() }
    func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode((Int64, Int64).self).0 }
}
