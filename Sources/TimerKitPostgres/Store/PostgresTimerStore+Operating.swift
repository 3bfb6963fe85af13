import Foundation
import Logging
import PostgresNIO
import TimerKitDurable

// What an operator sees and does (schema version 4): the run history, pauses, the instances
// alive, and counts by status.

extension PostgresTimerStore {
    // MARK: History

    /// Common table expressions (`recorded`, `pruned`; to follow a comma) that record `run` once the statement's
    /// `changed` rows exist, and keeps the timer's last `keep` runs; its values are bound on
    /// `statement`, after what it holds. Data-modifying CTEs run whether or not the query reads them, in its transaction.
    static func recordingCTE(_ run: DurableTimerRun, namespace: String, keep: Int, into statement: inout Statement) -> String {
        func bind(_ value: String) -> String { statement.bind(value) }
        func bind(_ value: Int64) -> String { statement.bind(value) }
        let error: String
        if let text = run.error {
            error = bind(text)
        } else {
            error = "NULL::text"
        }
        let (namespace, key, started) = (bind(namespace), bind(run.key), bind(run.startedNanoseconds))
        // The statement sees the table as it was before it: the new run is not among the rows the
        // prune counts, so it keeps `keep - 1` of the older ones.
        let older =
            keep <= 1
            ? started
            : """
            coalesce((SELECT started_ns FROM timerkit_runs o WHERE o.namespace = \(namespace) AND o.key = \(key)
                ORDER BY o.started_ns DESC OFFSET \(keep - 2) LIMIT 1), (-9223372036854775807)::bigint)
            """
        return """

            recorded AS (
                INSERT INTO timerkit_runs (namespace, key, started_ns, sequence, attempt, handler, due_ns, ended_ns, outcome, instance, error)
                SELECT \(namespace), \(key), \(started), \(bind(run.sequence)), \(bind(Int64(run.attempt)))::integer, \(bind(run.handler)),
                    \(bind(run.dueNanoseconds)), \(bind(run.endedNanoseconds)), \(bind(run.outcome.rawValue)), \(bind(run.instance)), \(error)
                FROM changed ON CONFLICT DO NOTHING RETURNING 1
            ),
            pruned AS (
                DELETE FROM timerkit_runs r WHERE r.namespace = \(namespace) AND r.key = \(key) AND EXISTS (SELECT 1 FROM changed)
                    AND r.started_ns < \(older)
                RETURNING 1
            )
            """
    }

    func history(namespace: String, key: String, limit: Int) async throws(DurableTimerError) -> [DurableTimerRun] {
        try await call { connection, logger in
            let rows = try await connection.query(
                """
                SELECT key, handler, sequence, attempt, due_ns, started_ns, ended_ns, outcome, instance, error FROM timerkit_runs
                WHERE namespace = \(namespace) AND key = \(key) ORDER BY started_ns DESC LIMIT \(Int64(max(limit, 0)))
                """, logger: logger)
            var runs: [DurableTimerRun] = []
            for try await (key, handler, sequence, attempt, due, started, ended, outcome, instance, error) in rows.decode(
                (String, String, Int64, Int32, Int64, Int64, Int64, String, String, String?).self)
            {
                runs.append(
                    DurableTimerRun(
                        key: key, handler: handler, sequence: sequence, attempt: Int(attempt), due: due, started: started, ended: ended,
                        outcome: DurableTimerRun.Outcome(rawValue: outcome) ?? .failed, instance: instance, error: error))
            }
            return runs
        }
    }

    func pruneHistory(namespace: String, endedBefore: Int64, limit: Int) async throws(DurableTimerError) -> Int {
        try await call { connection, logger in
            let rows = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM timerkit_runs WHERE ctid IN (
                        SELECT ctid FROM timerkit_runs WHERE namespace = \(namespace) AND ended_ns < \(endedBefore) ORDER BY ended_ns LIMIT \(Int64(max(limit, 0))))
                    RETURNING 1)
                SELECT count(*) FROM gone
                """, logger: logger)
            var count: Int64 = 0
            for try await value in rows.decode(Int64.self) { count = value }
            return Int(count)
        }
    }

    // MARK: Pauses

    func pause(namespace: String, key: String) async throws(DurableTimerError) -> Bool {
        try await call { connection, logger in
            let rows = try await connection.query(
                """
                WITH paused AS (
                    UPDATE timerkit_timers SET \(unescaped: Self.dialect.pauseAssignments)
                    WHERE namespace = \(namespace) AND key = \(key) AND \(unescaped: StoredPause.isNotPaused()) RETURNING 1)
                SELECT count(*) FROM timerkit_timers WHERE namespace = \(namespace) AND key = \(key)
                """, logger: logger)
            var count: Int64 = 0
            for try await value in rows.decode(Int64.self) { count = value }
            return count > 0
        }
    }

    func resume(namespace: String, key: String) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await fetchOne(
            """
            WITH resumed AS (
                UPDATE timerkit_timers t SET \(unescaped: Self.dialect.resumeAssignments)
                WHERE t.namespace = \(namespace) AND t.key = \(key) AND \(unescaped: StoredPause.isPaused("t."))
                    AND NOT EXISTS (SELECT 1 FROM timerkit_pauses p WHERE p.namespace = t.namespace AND p.handler IN ('', t.handler))
                RETURNING \(unescaped: Self.columns(prefix: "t."))
            ),
            notified AS (
                SELECT pg_notify(\(Self.channel(for: namespace)), \(unescaped: Notice.ready))
                FROM resumed WHERE NOT parked
            )
            SELECT resumed.* FROM resumed, (SELECT count(*) FROM notified) n
            """)
    }

    func pause(namespace: String, handler: String?, now reading: Int64, batch: Int) async throws(DurableTimerError) -> Int {
        // The pause first, in a write of its own: a timer scheduled from then on is stored paused.
        try await call { connection, logger in
            _ = try await connection.query(
                """
                INSERT INTO timerkit_pauses (namespace, handler, since_ns) VALUES (\(namespace), \(handler ?? ""), \(reading))
                ON CONFLICT (namespace, handler) DO UPDATE SET since_ns = excluded.since_ns
                """, logger: logger)
        }
        return try await inBatches(namespace: namespace, handler: handler, batch: batch) { keys in
            """
            UPDATE timerkit_timers SET \(unescaped: Self.dialect.pauseAssignments)
            WHERE namespace = \(namespace) AND key = ANY(\(keys)::text[]) AND \(unescaped: StoredPause.isNotPaused())
            """
        }
    }

    func resume(namespace: String, handler: String?, batch: Int) async throws(DurableTimerError) -> Int {
        let namespacePaused = try await call { connection, logger in
            let rows = try await connection.query(
                """
                WITH removed AS (DELETE FROM timerkit_pauses WHERE namespace = \(namespace) AND handler = \(handler ?? "") RETURNING 1)
                SELECT EXISTS (SELECT 1 FROM timerkit_pauses WHERE namespace = \(namespace) AND handler = '' AND \(handler ?? "") <> '')
                """, logger: logger)
            var paused = false
            for try await value in rows.decode(Bool.self) { paused = value }
            return paused
        }
        // A handler's timers stay paused while the namespace is.
        if namespacePaused { return 0 }
        let resumed = try await inBatches(namespace: namespace, handler: handler, batch: batch) { keys in
            """
            UPDATE timerkit_timers t SET \(unescaped: Self.dialect.resumeAssignments)
            WHERE t.namespace = \(namespace) AND t.key = ANY(\(keys)::text[]) AND \(unescaped: StoredPause.isPaused("t."))
                AND NOT EXISTS (SELECT 1 FROM timerkit_pauses p WHERE p.namespace = t.namespace AND p.handler IN ('', t.handler))
            """
        }
        // Every instance loads its horizon again: the resumed timers may be due.
        try await call { connection, logger in
            _ = try await connection.query(Self.notifyStatement(namespace: namespace, .reload), logger: logger)
        }
        return resumed
    }

    /// Walks the namespace's timers (of `handler`, if given) in key order, `batch` keys per
    /// statement, running the statement `change` makes for each batch's keys; returns how many
    /// rows the statements changed. No statement holds its row locks for more than one batch.
    private func inBatches(namespace: String, handler: String?, batch: Int, _ change: @escaping @Sendable ([String]) -> PostgresQuery)
        async throws(DurableTimerError) -> Int
    {
        var after = ""
        var changed = 0
        let size = Int64(max(batch, 1))
        while true {
            let from = after
            let keys = try await call { connection, logger in
                let rows =
                    if let handler {
                        try await connection.query(
                            """
                            SELECT key FROM timerkit_timers WHERE namespace = \(namespace) AND key > \(from) AND handler = \(handler) ORDER BY key LIMIT \(size)
                            """, logger: logger)
                    } else {
                        try await connection.query(
                            "SELECT key FROM timerkit_timers WHERE namespace = \(namespace) AND key > \(from) ORDER BY key LIMIT \(size)", logger: logger)
                    }
                var keys: [String] = []
                for try await key in rows.decode(String.self) { keys.append(key) }
                return keys
            }
            guard let last = keys.last else { return changed }
            var statement = Statement(startingWith: change(keys))
            statement.prepend("WITH c AS (")
            statement.append(" RETURNING 1) SELECT count(*) FROM c")
            let counting = statement.query
            changed += try await call { connection, logger in
                let result = try await connection.query(counting, logger: logger)
                var count: Int64 = 0
                for try await value in result.decode(Int64.self) { count = value }
                return Int(count)
            }
            guard keys.count == Int(size) else { return changed }
            after = last
        }
    }

    func expedite(namespace: String, key: String, now reading: Int64) async throws(DurableTimerError) -> DurableTimerRecord? {
        let now = now(reading)
        return try await fetchOne(
            """
            WITH c AS (SELECT coalesce(\(now)::bigint, timerkit_now_ns()) AS ns),
            expedited AS (
                UPDATE timerkit_timers t SET ready_at_ns = c.ns FROM c
                WHERE t.namespace = \(namespace) AND t.key = \(key) AND NOT t.parked AND t.ready_at_ns > c.ns
                    AND (t.owner IS NULL OR t.lease_until_ns <= c.ns)
                RETURNING \(unescaped: Self.columns(prefix: "t."))
            ),
            notified AS (
                SELECT pg_notify(\(Self.channel(for: namespace)), \(unescaped: Notice.ready))
                FROM expedited
            )
            SELECT expedited.* FROM expedited, (SELECT count(*) FROM notified) n
            """)
    }

    func pauses(namespace: String) async throws(DurableTimerError) -> [DurablePause] {
        try await call { connection, logger in
            let rows = try await connection.query(
                "SELECT handler, since_ns FROM timerkit_pauses WHERE namespace = \(namespace) ORDER BY handler", logger: logger)
            var pauses: [DurablePause] = []
            for try await (handler, since) in rows.decode((String, Int64).self) {
                pauses.append(DurablePause(handler: handler.isEmpty ? nil : handler, since: since))
            }
            return pauses
        }
    }

    // MARK: Instances

    func heartbeat(_ instance: DurableInstance) async throws(DurableTimerError) {
        // Seen on the database's clock: every instance's record reads on one clock.
        let seen = now(instance.seenNanoseconds)
        try await call { connection, logger in
            _ = try await connection.query(
                """
                INSERT INTO timerkit_instances (namespace, id, host, pid, handlers, started_ns, seen_ns, interval_ns)
                VALUES (\(instance.namespace), \(instance.id), \(instance.host), \(Int64(instance.processID)), \(instance.handlers.joined(separator: "\n")),
                    coalesce(\(seen)::bigint, timerkit_now_ns()), coalesce(\(seen)::bigint, timerkit_now_ns()), \(instance.intervalNanoseconds))
                ON CONFLICT (namespace, id) DO UPDATE SET host = excluded.host, pid = excluded.pid, handlers = excluded.handlers,
                    seen_ns = excluded.seen_ns, interval_ns = excluded.interval_ns
                """, logger: logger)
        }
    }

    func removeInstance(namespace: String, id: String) async throws(DurableTimerError) {
        try await call { connection, logger in
            _ = try await connection.query("DELETE FROM timerkit_instances WHERE namespace = \(namespace) AND id = \(id)", logger: logger)
        }
    }

    func instances(namespace: String) async throws(DurableTimerError) -> [DurableInstance] {
        try await call { connection, logger in
            let rows = try await connection.query(
                """
                SELECT namespace, id, host, pid, handlers, started_ns, seen_ns, interval_ns FROM timerkit_instances
                WHERE namespace = \(namespace) ORDER BY seen_ns DESC, id
                """, logger: logger)
            var instances: [DurableInstance] = []
            for try await (namespace, id, host, pid, handlers, started, seen, interval) in rows.decode(
                (String, String, String, Int64, String, Int64, Int64, Int64).self)
            {
                instances.append(
                    DurableInstance(
                        namespace: namespace, id: id, host: host, processID: Int32(clamping: pid),
                        handlers: handlers.isEmpty ? [] : handlers.components(separatedBy: "\n"), started: started, seen: seen, interval: interval))
            }
            return instances
        }
    }

    // MARK: Counts

    func stats(namespace: String, now: Int64, lateBefore: Int64, since: Int64) async throws(DurableTimerError) -> [DurableHandlerCounts] {
        try await call { connection, logger in
            var counts: [String: DurableHandlerCounts] = [:]
            var binds = PostgresBindings(capacity: 3)
            binds.append(namespace)
            binds.append(now)
            binds.append(lateBefore)
            let rows = try await connection.query(PostgresQuery(unsafeSQL: DurableTimerFilter.countsSQL(dialect: .postgres), binds: binds), logger: logger)
            for try await (handler, paused, parked, running, due, retrying, scheduled, oldest, late) in rows.decode(
                (String, Int64, Int64, Int64, Int64, Int64, Int64, Int64?, Int64).self)
            {
                counts[handler] = DurableHandlerCounts(
                    handler: handler,
                    counts: [
                        .paused: Int(paused), .parked: Int(parked), .running: Int(running), .due: Int(due), .retrying: Int(retrying),
                        .scheduled: Int(scheduled)
                    ], oldestDue: oldest, late: Int(late))
            }
            var window = PostgresBindings(capacity: 2)
            window.append(namespace)
            window.append(since)
            let runs = try await connection.query(PostgresQuery(unsafeSQL: DurableTimerFilter.latenessSQL(dialect: .postgres), binds: window), logger: logger)
            for try await (handler, lateness) in runs.decode((String, Int64).self) {
                counts[handler, default: DurableHandlerCounts(handler: handler)].lateness.append(lateness)
            }
            return counts.values.sorted { $0.handler < $1.handler }
        }
    }
}
