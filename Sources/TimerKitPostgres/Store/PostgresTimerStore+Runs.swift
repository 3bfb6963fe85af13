import Foundation
import Logging
import PostgresNIO
import TimerKit
import TimerKitDurable

// The fenced steps of a run: claims (by key, in batches, and the sweep of a backlog), its end
// (finish, in batches), renewals, a release, and a move to another occurrence. Every write names
// the claim's token and the occurrence's sequence, and changes nothing unless both still match.
extension PostgresTimerStore {
    func claim(namespace: String, key: String, owner: String, now reading: Int64, leaseUntil: Int64, early: Bool) async throws(DurableTimerError)
        -> DurableClaim
    {
        let lease = leaseUntil - reading
        let now = now(reading)
        let ready = early ? "(t.owner IS NULL OR t.lease_until_ns <= c.ns)" : "t.ready_at_ns <= c.ns"
        let claimed = try await fetchOne(
            """
            WITH c AS (SELECT coalesce(\(now)::bigint, timerkit_now_ns()) AS ns),
            target AS (
                SELECT t.namespace, t.key FROM timerkit_timers t, c
                WHERE t.namespace = \(namespace) AND t.key = \(key) AND NOT t.parked AND \(unescaped: ready)
                FOR UPDATE OF t SKIP LOCKED
            )
            UPDATE timerkit_timers t SET owner = \(owner), lease_until_ns = c.ns + \(lease), ready_at_ns = c.ns + \(lease), attempts = t.attempts + 1
            FROM target, c WHERE t.namespace = target.namespace AND t.key = target.key
            RETURNING \(unescaped: Self.columns(prefix: "t."))
            """)
        if let claimed { return .claimed(claimed) }
        let readyAt = try await call { connection, logger in
            let rows = try await connection.query(
                "SELECT ready_at_ns FROM timerkit_timers WHERE namespace = \(namespace) AND key = \(key) AND NOT parked", logger: logger)
            var readyAt: Int64?
            for try await value in rows.decode(Int64.self) { readyAt = value }
            return readyAt
        }
        return readyAt.map { .notReady(readyAt: $0) } ?? .gone
    }

    func claim(namespace: String, keys: [String], owner: String, now reading: Int64, leaseUntil: Int64) async throws(DurableTimerError) -> DurableClaimBatch {
        let lease = leaseUntil - reading
        let now = now(reading)
        // One probe of the primary key per key, whatever the table's statistics say (see
        // ``ClaimKeys``). (`key = ANY(…)` beside the namespace let the planner pick the ready
        // index, which matches `NOT parked` too, and read every ready row of the namespace per
        // claim on a table not analyzed since a bulk load: 52.9 M index entries for 20,000 fires.)
        let statement = ClaimKeys(now: now, keys: keys, namespace: namespace, owner: owner, lease: lease)
        return try await call { connection, logger in
            var batch = DurableClaimBatch(claimed: [], waiting: [:])
            for try await (record, claimed, locked) in try await connection.execute(statement, logger: logger) {
                if claimed {
                    batch.claimed.append(record)
                } else {
                    batch.waiting[StoredKey(record.key)] = record.readyAt
                    if record.owner != nil || locked { batch.held.insert(StoredKey(record.key)) }
                }
            }
            return batch
        }
    }

    /// The next ready rows in ready-time order, `FOR UPDATE SKIP LOCKED` under a `LIMIT`: a range
    /// of the ready index, and instances sweeping at once each take rows the others have not
    /// locked. "Now" is a scalar the index range can use, not a join.
    func sweep(namespace: String, handlers: [String], owner: String, excluding: [String], now reading: Int64, leaseUntil: Int64, limit: Int)
        async throws(DurableTimerError)
        -> [DurableTimerRecord]
    {
        guard !handlers.isEmpty, limit > 0 else { return [] }
        // The function of schema version 3 (its planner settings are the point: see there).
        let statement = Sweep(
            namespace: namespace, handlers: handlers, owner: owner, excluding: excluding, now: now(reading), lease: leaseUntil - reading,
            limit: Int32(clamping: limit))
        return try await call { connection, logger in
            var records: [DurableTimerRecord] = []
            for try await record in try await connection.execute(statement, logger: logger) { records.append(record) }
            return records
        }
    }

    func finish(namespace: String, key: String, owner: String, sequence: Int64, outcome: DurableTimerOutcome, run: DurableTimerRun?, keep: Int)
        async throws(DurableTimerError) -> Bool
    {
        let recording = keep > 0 ? run.map { (run: $0, namespace: namespace) } : nil
        switch outcome {
        case .delete:
            return try await changed(
                "DELETE FROM timerkit_timers WHERE namespace = \(namespace) AND key = \(key) AND owner = \(owner) AND sequence = \(sequence) RETURNING namespace, key, handler, ready_at_ns",
                notifying: nil, recording: recording, keep: keep)
        case .advance(let due, let skipped, let fired):
            return try await changed(
                """
                UPDATE timerkit_timers SET due_ns = \(due), ready_at_ns = \(due), sequence = nextval('timerkit_sequence'), skipped = \(Int64(skipped)),
                    fire_count = fire_count + \(fired ? Int64(1) : 0), attempts = 0, last_error = NULL, owner = NULL, lease_until_ns = NULL
                WHERE namespace = \(namespace) AND key = \(key) AND owner = \(owner) AND sequence = \(sequence) RETURNING namespace, key, handler, ready_at_ns
                """, notifying: namespace, recording: recording, keep: keep)
        case .retry(let readyAt, let error):
            return try await changed(
                """
                UPDATE timerkit_timers SET ready_at_ns = \(readyAt), last_error = \(error), owner = NULL, lease_until_ns = NULL
                WHERE namespace = \(namespace) AND key = \(key) AND owner = \(owner) AND sequence = \(sequence) RETURNING namespace, key, handler, ready_at_ns
                """, notifying: namespace, recording: recording, keep: keep)
        case .park(let error):
            // A timer paused while it ran stays paused, and is parked once resumed.
            return try await changed(
                """
                UPDATE timerkit_timers SET \(unescaped: Self.dialect.parkAssignments), last_error = \(error), owner = NULL,
                    lease_until_ns = NULL
                WHERE namespace = \(namespace) AND key = \(key) AND owner = \(owner) AND sequence = \(sequence) RETURNING namespace, key, handler, ready_at_ns
                """, notifying: nil, recording: recording, keep: keep)
        }
    }

    func finishAll(namespace: String, completed: [DurableCompletion], keep: Int) async throws(DurableTimerError) -> Set<StoredKey> {
        guard !completed.isEmpty else { return [] }
        // In key order, as renewals bind theirs: with the plan driven by the array, both lock rows
        // in the same order, which keeps them from deadlocking each other.
        let completed = completed.sorted { $0.key < $1.key }
        let statement = FinishAll(
            keys: completed.map(\.key), owners: completed.map(\.owner), sequences: completed.map(\.sequence), namespace: namespace,
            runs: completed.map { keep > 0 ? $0.run : nil })
        return try await call(.reserved) { connection, logger in
            var removed: Set<StoredKey> = []
            for try await key in try await connection.execute(statement, logger: logger) { removed.insert(StoredKey(key)) }
            return removed
        }
    }

    func renewAll(namespace: String, claims: [DurableHeldClaim], now reading: Int64, leaseUntil: Int64) async throws(DurableTimerError) -> Set<StoredKey> {
        guard !claims.isEmpty else { return [] }
        let claims = claims.sorted { $0.key < $1.key }  // in key order, as completions bind theirs
        // The lease runs from the database's now for as long as the runner asked from its own.
        let lease = leaseUntil.addingSaturating(-reading)
        let now = now(reading)
        // Schema version 6's function (one probe of the primary key per key).
        let renewal: PostgresQuery = """
            SELECT timerkit_renew(\(now)::bigint, \(lease)::bigint, \(claims.map(\.key))::text[], \(claims.map(\.owner))::text[], \(claims.map(\.sequence))::bigint[], \(namespace))
            """
        return try await call(.reserved) { connection, logger in
            var renewed: Set<StoredKey> = []
            for try await key in try await connection.query(renewal, logger: logger).decode(String.self) { renewed.insert(StoredKey(key)) }
            return renewed
        }
    }

    func release(namespace: String, key: String, owner: String, sequence: Int64, readyAt: Int64) async throws(DurableTimerError) -> Bool {
        try await changed(
            """
            UPDATE timerkit_timers SET ready_at_ns = \(readyAt), attempts = greatest(attempts - 1, 0), owner = NULL, lease_until_ns = NULL
            WHERE namespace = \(namespace) AND key = \(key) AND owner = \(owner) AND sequence = \(sequence)
            RETURNING namespace, key, handler, ready_at_ns
            """, notifying: namespace)
    }

    func move(namespace: String, key: String, due: Int64, readyAt: Int64, ifSequence: Int64?) async throws(DurableTimerError) -> DurableTimerRecord? {
        let horizon = notifyWithin
        return try await fetchOne(
            """
            WITH moved AS (
                UPDATE timerkit_timers SET due_ns = \(due), ready_at_ns = \(readyAt), sequence = nextval('timerkit_sequence'), attempts = 0,
                    skipped = 0, last_error = NULL, \(unescaped: Self.dialect.unparkAssignments)
                WHERE namespace = \(namespace) AND key = \(key) AND owner IS NULL AND (\(ifSequence)::bigint IS NULL OR sequence = \(ifSequence))
                RETURNING \(unescaped: Self.allColumns)
            ),
            notified AS (
                SELECT pg_notify(\(Self.channel(for: namespace)), \(unescaped: Notice.ready))
                FROM moved WHERE ready_at_ns <= timerkit_now_ns() + \(horizon)
            )
            SELECT moved.* FROM moved, (SELECT count(*) FROM notified) n
            """)
    }
}
