import Foundation
import Logging
import PostgresNIO
import TimerKit
import TimerKitDurable

// Reading timers: one by key, pages by key, the ready ones for a load of the horizon, the
// orphans, a filtered query and the count.
extension PostgresTimerStore {
    func record(namespace: String, key: String) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await fetchOne("SELECT \(unescaped: Self.allColumns) FROM timerkit_timers WHERE namespace = \(namespace) AND key = \(key)")
    }

    func records(namespace: String, after cursor: DurableTimerCursor?, limit: Int) async throws(DurableTimerError) -> [DurableTimerRecord] {
        try await fetchAll(
            """
            SELECT \(unescaped: Self.allColumns) FROM timerkit_timers
            WHERE namespace = \(namespace) AND (ready_at_ns, key) > (\(cursor?.readyAt ?? .min), \(cursor?.key ?? ""))
            ORDER BY ready_at_ns, key LIMIT \(Int64(limit))
            """)
    }

    func ready(namespace: String, by: Int64, handlers: [String], after cursor: DurableTimerCursor?, limit: Int) async throws(DurableTimerError)
        -> [DurableReadyTimer]
    {
        guard !handlers.isEmpty else { return [] }
        // A row comparison after the cursor, so that each page is a range of the ready index: an
        // OR of conditions made every page scan from the namespace's first row (a load of 100,000
        // took 10 s).
        let query: PostgresQuery = """
            SELECT key, ready_at_ns, handler FROM timerkit_timers
            WHERE namespace = \(namespace) AND NOT parked AND ready_at_ns <= \(by) AND handler = ANY(\(handlers)::text[])
                AND (ready_at_ns, key) > (\(cursor?.readyAt ?? .min), \(cursor?.key ?? ""))
            ORDER BY ready_at_ns, key LIMIT \(Int64(limit))
            """
        return try await call { connection, logger in
            var ready: [DurableReadyTimer] = []
            for try await (key, readyAt, handler) in try await connection.query(query, logger: logger).decode((String, Int64, String).self) {
                ready.append(DurableReadyTimer(key: key, readyAt: readyAt, handler: handler))
            }
            return ready
        }
    }

    func orphans(namespace: String, handlers: [String], limit: Int) async throws(DurableTimerError) -> [DurableTimerRecord] {
        try await fetchAll(
            """
            SELECT \(unescaped: Self.allColumns) FROM timerkit_timers
            WHERE namespace = \(namespace) AND NOT (handler = ANY(\(handlers)::text[])) ORDER BY key LIMIT \(Int64(limit))
            """)
    }

    func query(namespace: String, _ filter: DurableTimerFilter, now: Int64, afterKey: String?, limit: Int) async throws(DurableTimerError)
        -> [DurableTimerRecord]
    {
        let (conditions, statuses, values) = filter.clauses(namespace: namespace, now: now, afterKey: afterKey, dialect: .postgres)
        // The filter's conditions name its values' placeholders, in order: bound first, then the limit.
        var statement = Statement()
        for value in values {
            switch value {
            case .text(let text): _ = statement.bind(text)
            case .integer(let integer): _ = statement.bind(integer)
            }
        }
        let limit = statement.bind(Int64(limit))
        statement.append(
            statuses.map { statuses in
                // The key-ordered scan in a subquery the planner keeps whole (OFFSET 0): the
                // statuses filter its rows as they come, and the limit stops it.
                """
                SELECT \(Self.allColumns) FROM (
                    SELECT \(Self.allColumns) FROM timerkit_timers WHERE \(conditions) ORDER BY key OFFSET 0
                ) AS t WHERE \(statuses) ORDER BY key LIMIT \(limit)
                """
            } ?? "SELECT \(Self.allColumns) FROM timerkit_timers WHERE \(conditions) ORDER BY key LIMIT \(limit)")
        return try await fetchAll(statement.query)
    }

    func count(namespace: String) async throws(DurableTimerError) -> Int {
        try await call { connection, logger in
            let rows = try await connection.query("SELECT count(*) FROM timerkit_timers WHERE namespace = \(namespace)", logger: logger)
            var count: Int64 = 0
            for try await value in rows.decode(Int64.self) { count = value }
            return Int(count)
        }
    }
}
