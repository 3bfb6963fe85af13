import Foundation
import Logging
import PostgresNIO
import TimerKit
import TimerKitDurable

// Rows and statements: the columns a record is read from and its decoding, the calls that fetch
// records, and the wrapper of a statement that changes rows (it notifies other instances of the
// rows ready within the horizon and records a run with it).
extension PostgresTimerStore {
    /// The columns a record is read from, in this order (``PostgresColumnReader``).
    static let recordColumns = [
        "namespace", "key", "handler", "payload", "interval_ns", "rule", "misfire", "due_ns", "ready_at_ns", "sequence", "fire_count", "attempts",
        "skipped", "last_error", "parked", "owner", "lease_until_ns", "paused", "trace_context"
    ]

    /// The record's columns for a statement's select list or `RETURNING`.
    static let allColumns = columns(prefix: "")

    static func columns(prefix: String) -> String {
        recordColumns.map { prefix + $0 }.joined(separator: ", ")
    }

    /// A row as a record, whatever it holds (see ``DurableTimerRecord/init(reading:)``).
    static func record(_ row: PostgresRow) -> DurableTimerRecord {
        var reader = PostgresColumnReader(row)
        return DurableTimerRecord(reading: &reader)
    }

    func fetchAll(_ query: PostgresQuery) async throws(DurableTimerError) -> [DurableTimerRecord] {
        try await call { connection, logger in
            var records: [DurableTimerRecord] = []
            for try await row in try await connection.query(query, logger: logger) { records.append(Self.record(row)) }
            return records
        }
    }

    func fetchOne(_ query: PostgresQuery) async throws(DurableTimerError) -> DurableTimerRecord? {
        try await fetchAll(query).first
    }

    /// Runs a statement that returns (key, handler, ready time) of the rows it changed; with a
    /// namespace to notify, tells its other instances of a row ready within the horizon. Returns
    /// whether a row changed.
    func changed(_ query: PostgresQuery, notifying namespace: String?, recording run: (run: DurableTimerRun, namespace: String)? = nil, keep: Int = 0)
        async throws(DurableTimerError) -> Bool
    {
        let final = Self.changedStatement(query, notifying: namespace.map { ($0, notifyWithin) }, recording: run, keep: keep)
        return try await call(.reserved) { connection, logger in
            var count: Int64 = 0
            for try await (changed, _) in try await connection.query(final, logger: logger).decode((Int64, Int64).self) { count = changed }
            return count > 0
        }
    }

    /// The statement ``changed(_:notifying:recording:keep:)`` runs: `query` as the CTE `changed`,
    /// then the run's record and the history's pruning (`recording`), then the notification of
    /// the rows ready within `notifying.within` nanoseconds of now, and the counts. Every value is
    /// bound, numbered as it is added.
    static func changedStatement(
        _ query: PostgresQuery, notifying: (namespace: String, within: Int64)?, recording run: (run: DurableTimerRun, namespace: String)?, keep: Int
    ) -> PostgresQuery {
        var statement = Statement(startingWith: query)
        statement.prepend("WITH changed AS (")
        statement.append(")")
        if let run {
            let recorded = recordingCTE(run.run, namespace: run.namespace, keep: keep, into: &statement)
            statement.append("," + recorded)
        }
        guard let notifying else {
            statement.append("\nSELECT count(*), 0::bigint FROM changed")
            return statement.query
        }
        let channelPlaceholder = statement.bind(Self.channel(for: notifying.namespace))
        let within = statement.bind(notifying.within)
        statement.append(
            """
            ,
            notified AS (
                SELECT pg_notify(\(channelPlaceholder), \(Notice.ready))
                FROM changed WHERE ready_at_ns <= timerkit_now_ns() + \(within)
            )
            SELECT count(*), (SELECT count(*) FROM notified) FROM changed
            """)
        return statement.query
    }
}
