import Foundation
import GRDB

// Reading timers: one by key, pages by key, a filtered query, the ready ones for a load of the
// horizon, the orphans and the count.
extension SQLiteTimerStore {
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
}
