import Foundation
import GRDB

// What an operator sees and does (schema version 4): the run history, pauses, the instances
// alive, and counts by status.

extension SQLiteTimerStore {
    // MARK: History

    func history(namespace: String, key: String, limit: Int) async throws(DurableTimerError) -> [DurableTimerRun] {
        try await read { db in
            try db.rows(
                "SELECT * FROM timerkit_runs WHERE namespace = ? AND key = ? ORDER BY started_ns DESC LIMIT ?", [namespace, key, max(limit, 0)]
            ).map { Self.run($0) }
        }
    }

    func pruneHistory(namespace: String, endedBefore: Int64, limit: Int) async throws(DurableTimerError) -> Int {
        try await write { db in
            try db.run(
                """
                DELETE FROM timerkit_runs WHERE (namespace, key, started_ns, sequence, attempt) IN (
                    SELECT namespace, key, started_ns, sequence, attempt FROM timerkit_runs
                    WHERE namespace = ? AND ended_ns < ? ORDER BY ended_ns LIMIT ?)
                """, [namespace, endedBefore, max(limit, 0)])
            return db.changesCount
        }
    }

    /// A history row as a run; a value that does not read shows as a placeholder (and an
    /// unknown outcome as `failed`), never a trap.
    static func run(_ row: Row) -> DurableTimerRun {
        var reader = SQLiteRowReader(row: row)
        return DurableTimerRun(
            key: reader.text("key"), handler: reader.text("handler"), sequence: reader.integer("sequence"),
            attempt: Int(clamping: reader.integer("attempt")), due: reader.integer("due_ns"), started: reader.integer("started_ns"),
            ended: reader.integer("ended_ns"), outcome: DurableTimerRun.Outcome(rawValue: reader.text("outcome")) ?? .failed,
            instance: reader.text("instance"), error: reader.optionalText("error"))
    }

    // MARK: Pauses

    func pause(namespace: String, key: String) async throws(DurableTimerError) -> Bool {
        try await write { db in
            try db.run(
                "UPDATE timerkit_timers SET \(Self.dialect.pauseAssignments) WHERE namespace = ? AND key = ? AND \(StoredPause.isNotPaused())",
                [namespace, key])
            return try db.row("SELECT 1 FROM timerkit_timers WHERE namespace = ? AND key = ?", [namespace, key]) != nil
        }
    }

    func resume(namespace: String, key: String) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await write { db in
            try db.row(
                """
                UPDATE timerkit_timers SET \(Self.dialect.resumeAssignments)
                WHERE namespace = ?1 AND key = ?2 AND \(StoredPause.isPaused())
                    AND NOT EXISTS (SELECT 1 FROM timerkit_pauses p WHERE p.namespace = ?1 AND p.handler IN ('', timerkit_timers.handler))
                RETURNING *
                """, [namespace, key]
            ).map { Self.record($0) }
        }
    }

    func pause(namespace: String, handler: String?, now: Int64, batch: Int) async throws(DurableTimerError) -> Int {
        // The pause first, in a write of its own: a timer scheduled from then on is stored paused.
        try await write { db in
            try db.run("INSERT OR REPLACE INTO timerkit_pauses (namespace, handler, since_ns) VALUES (?, ?, ?)", [namespace, handler ?? "", now])
        }
        return try await inBatches(namespace: namespace, handler: handler, batch: batch) { keys, db in
            try db.run(
                """
                UPDATE timerkit_timers SET \(Self.dialect.pauseAssignments)
                WHERE namespace = ? AND \(StoredPause.isNotPaused()) AND key IN (SELECT value FROM json_each(?))
                """, [namespace, Self.json(keys)])
        }
    }

    func resume(namespace: String, handler: String?, batch: Int) async throws(DurableTimerError) -> Int {
        let namespacePaused = try await write { db in
            try db.run("DELETE FROM timerkit_pauses WHERE namespace = ? AND handler = ?", [namespace, handler ?? ""])
            return try db.row("SELECT 1 FROM timerkit_pauses WHERE namespace = ? AND handler = ''", [namespace]) != nil
        }
        // A handler's timers stay paused while the namespace is.
        if namespacePaused { return 0 }
        return try await inBatches(namespace: namespace, handler: handler, batch: batch) { keys, db in
            try db.run(
                """
                UPDATE timerkit_timers SET \(Self.dialect.resumeAssignments)
                WHERE namespace = ?1 AND \(StoredPause.isPaused()) AND key IN (SELECT value FROM json_each(?2))
                    AND NOT EXISTS (SELECT 1 FROM timerkit_pauses p WHERE p.namespace = ?1 AND p.handler IN ('', timerkit_timers.handler))
                """, [namespace, Self.json(keys)])
        }
    }

    /// Walks the namespace's timers (of `handler`, if given) in key order, `batch` keys per write,
    /// applying `change` to each batch's keys; returns how many rows the changes touched. No
    /// write holds the lock for more than one batch.
    private func inBatches(namespace: String, handler: String?, batch: Int, _ change: @escaping (_ keys: [String], Database) throws -> Void)
        async throws(DurableTimerError) -> Int
    {
        var after = ""
        var changed = 0
        while true {
            let (keys, count) = try await write { db -> ([String], Int) in
                let keys: [String] =
                    if let handler {
                        try String.fetchAll(
                            db.cachedStatement(sql: "SELECT key FROM timerkit_timers WHERE namespace = ? AND key > ? AND handler = ? ORDER BY key LIMIT ?"),
                            arguments: [namespace, after, handler, max(batch, 1)])
                    } else {
                        try String.fetchAll(
                            db.cachedStatement(sql: "SELECT key FROM timerkit_timers WHERE namespace = ? AND key > ? ORDER BY key LIMIT ?"),
                            arguments: [namespace, after, max(batch, 1)])
                    }
                guard !keys.isEmpty else { return ([], 0) }
                try change(keys, db)
                return (keys, db.changesCount)
            }
            changed += count
            guard let last = keys.last, keys.count == max(batch, 1) else { return changed }
            after = last
        }
    }

    private static func json(_ keys: [String]) -> String {
        String(decoding: (try? JSONEncoder().encode(keys)) ?? Data("[]".utf8), as: UTF8.self)
    }

    func expedite(namespace: String, key: String, now: Int64) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await write { db in
            try db.row(
                """
                UPDATE timerkit_timers SET ready_at_ns = ?1
                WHERE namespace = ?2 AND key = ?3 AND parked = 0 AND ready_at_ns > ?1 AND (owner IS NULL OR lease_until_ns <= ?1)
                RETURNING *
                """, [now, namespace, key]
            ).map { Self.record($0) }
        }
    }

    func pauses(namespace: String) async throws(DurableTimerError) -> [DurablePause] {
        try await read { db in
            try db.rows("SELECT handler, since_ns FROM timerkit_pauses WHERE namespace = ? ORDER BY handler", [namespace]).map { row in
                var reader = SQLiteRowReader(row: row)
                let handler = reader.text("handler")
                return DurablePause(handler: handler.isEmpty ? nil : handler, since: reader.integer("since_ns"))
            }
        }
    }

    // MARK: Instances

    func heartbeat(_ instance: DurableInstance) async throws(DurableTimerError) {
        try await write { db in
            try db.run(
                """
                INSERT INTO timerkit_instances (namespace, id, host, pid, handlers, started_ns, seen_ns, interval_ns)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (namespace, id) DO UPDATE SET
                    host = excluded.host, pid = excluded.pid, handlers = excluded.handlers, seen_ns = excluded.seen_ns, interval_ns = excluded.interval_ns
                """,
                [
                    instance.namespace, instance.id, instance.host, instance.processID, instance.handlers.joined(separator: "\n"),
                    instance.startedNanoseconds, instance.seenNanoseconds, instance.intervalNanoseconds
                ])
        }
    }

    func removeInstance(namespace: String, id: String) async throws(DurableTimerError) {
        try await write { db in try db.run("DELETE FROM timerkit_instances WHERE namespace = ? AND id = ?", [namespace, id]) }
    }

    func instances(namespace: String) async throws(DurableTimerError) -> [DurableInstance] {
        try await read { db in
            try db.rows("SELECT * FROM timerkit_instances WHERE namespace = ? ORDER BY seen_ns DESC, id", [namespace]).map { row in
                var reader = SQLiteRowReader(row: row)
                let handlers = reader.text("handlers")
                return DurableInstance(
                    namespace: reader.text("namespace"), id: reader.text("id"), host: reader.text("host"),
                    processID: Int32(clamping: reader.integer("pid")), handlers: handlers.isEmpty ? [] : handlers.components(separatedBy: "\n"),
                    started: reader.integer("started_ns"), seen: reader.integer("seen_ns"), interval: reader.integer("interval_ns"))
            }
        }
    }

    // MARK: Counts

    func stats(namespace: String, now: Int64, lateBefore: Int64, since: Int64) async throws(DurableTimerError) -> [DurableHandlerCounts] {
        try await read { db in
            var counts: [String: DurableHandlerCounts] = [:]
            for row in try db.rows(DurableTimerFilter.countsSQL(dialect: .sqlite), [namespace, now, lateBefore]) {
                var reader = SQLiteRowReader(row: row)
                let handler = reader.text("handler")
                var entry = DurableHandlerCounts(handler: handler)
                for status in DurableTimerQuery.Status.allCases {
                    entry.counts[status] = Int(clamping: reader.integer(status.rawValue))
                }
                entry.oldestDue = reader.optionalInteger("oldest_due")
                entry.late = Int(clamping: reader.integer("late"))
                counts[handler] = entry
            }
            for row in try db.rows(DurableTimerFilter.latenessSQL(dialect: .sqlite), [namespace, since]) {
                var reader = SQLiteRowReader(row: row)
                let handler = reader.text("handler")
                counts[handler, default: DurableHandlerCounts(handler: handler)].lateness.append(reader.integer("lateness"))
            }
            return counts.values.sorted { $0.handler < $1.handler }
        }
    }
}
