/// A ``DurableTimerQuery``'s conditions in a store's terms (instants in nanoseconds since 1970),
/// written as SQL for either store by ``whereClause(namespace:now:afterKey:dialect:)``.
package struct DurableTimerFilter: Sendable, Hashable {
    package var statuses: Set<DurableTimerQuery.Status> = []
    package var handler: String?
    package var keyPrefix: String?
    package var dueFrom: Int64?
    package var dueBefore: Int64?
    /// Only repeating timers whose occurrence came before this instant (late ones).
    package var lateBefore: Int64?

    package init(
        statuses: Set<DurableTimerQuery.Status> = [], handler: String? = nil, keyPrefix: String? = nil, dueFrom: Int64? = nil, dueBefore: Int64? = nil,
        lateBefore: Int64? = nil
    ) {
        self.statuses = statuses
        self.handler = handler
        self.keyPrefix = keyPrefix
        self.dueFrom = dueFrom
        self.dueBefore = dueBefore
        self.lateBefore = lateBefore
    }

    /// A value bound to a placeholder.
    package enum Value: Sendable, Hashable {
        case text(String)
        case integer(Int64)
    }

    /// How a store writes what differs between SQLite and PostgreSQL.
    package struct Dialect: Sendable {
        /// The n-th placeholder (1-based): `?1`, `$1`.
        let placeholder: @Sendable (Int) -> String
        /// True when the row is parked: `parked <> 0`, `parked`.
        let isParked: String
        /// Whether `key` begins with the text of a placeholder.
        let startsWith: @Sendable (String) -> String
        /// The value `parked` takes for true: `1`, `true`.
        let yes: String
        /// A condition as the value of `parked`: `CASE WHEN … THEN 1 ELSE 0 END`, `(…)`.
        let flag: @Sendable (String) -> String

        package static let sqlite = Dialect(
            placeholder: { "?\($0)" }, isParked: "parked <> 0", startsWith: { "substr(key, 1, length(\($0))) = \($0)" }, yes: "1",
            flag: { "CASE WHEN \($0) THEN 1 ELSE 0 END" })
        package static let postgres = Dialect(
            placeholder: { "$\($0)" }, isParked: "parked", startsWith: { "starts_with(key, \($0))" }, yes: "true", flag: { "(\($0))" })
    }

    /// The `WHERE` conditions of the namespace's timers that match, after `afterKey`, at `now`,
    /// and the values of their placeholders in order.
    package func whereClause(namespace: String, now: Int64, afterKey: String?, dialect: Dialect) -> (sql: String, values: [Value]) {
        let (conditions, statuses, values) = clauses(namespace: namespace, now: now, afterKey: afterKey, dialect: dialect)
        return (statuses.map { conditions + " AND " + $0 } ?? conditions, values)
    }

    /// ``whereClause(namespace:now:afterKey:dialect:)`` in two parts: the conditions an index in
    /// key order serves (namespace, cursor, handler, prefix, dues), and the statuses' condition,
    /// if any — which a store may apply outside the key-ordered scan, so that a planner cannot
    /// trade the early stop of `ORDER BY key LIMIT n` for a partial index and a sort of every row
    /// it matches (PostgreSQL did: 0.9 s for the first page of "scheduled" among a million).
    package func clauses(namespace: String, now: Int64, afterKey: String?, dialect: Dialect) -> (conditions: String, statuses: String?, values: [Value]) {
        var values: [Value] = []
        func bind(_ value: Value) -> String {
            values.append(value)
            return dialect.placeholder(values.count)
        }
        var conditions = ["namespace = \(bind(.text(namespace)))"]
        if let afterKey { conditions.append("key > \(bind(.text(afterKey)))") }
        if let handler { conditions.append("handler = \(bind(.text(handler)))") }
        if let keyPrefix {
            let prefix = bind(.text(keyPrefix))
            // The range condition lets the primary key's index start at the prefix.
            conditions.append("key >= \(prefix) AND \(dialect.startsWith(prefix))")
        }
        if let dueFrom { conditions.append("due_ns >= \(bind(.integer(dueFrom)))") }
        if let dueBefore { conditions.append("due_ns < \(bind(.integer(dueBefore)))") }
        if let lateBefore { conditions.append("(interval_ns IS NOT NULL OR rule IS NOT NULL) AND due_ns < \(bind(.integer(lateBefore)))") }
        if !statuses.isEmpty, statuses.count < DurableTimerQuery.Status.allCases.count {
            let now = bind(.integer(now))
            let held = "(lease_until_ns IS NOT NULL AND lease_until_ns > \(now))"
            let free = "NOT (\(dialect.isParked)) AND NOT \(held)"
            let each: [String] = statuses.sorted { $0.rawValue < $1.rawValue }.map { status in
                switch status {
                case .paused: "(paused <> 0)"
                case .parked: "(\(dialect.isParked) AND \(StoredPause.isNotPaused()))"
                case .running: "(NOT (\(dialect.isParked)) AND \(held))"
                case .due: "(\(free) AND ready_at_ns <= \(now))"
                case .retrying: "(\(free) AND ready_at_ns > \(now) AND attempts > 0)"
                case .scheduled: "(\(free) AND ready_at_ns > \(now) AND attempts = 0)"
                }
            }
            return (conditions.joined(separator: " AND "), "(" + each.joined(separator: " OR ") + ")", values)
        }
        return (conditions.joined(separator: " AND "), nil, values)
    }
}

extension DurableTimerFilter {
    /// Counts of a namespace's timers by handler and status (a column per ``DurableTimerQuery/Status``,
    /// named by its raw value) and each handler's earliest ready time among due timers
    /// (`oldest_due`), and its repeating timers whose occurrence came before placeholder 3
    /// (`late`); placeholder 1 is the namespace, 2 now.
    package static func countsSQL(dialect: Dialect) -> String {
        let now = dialect.placeholder(2)
        let parked = dialect.isParked
        let held = "(lease_until_ns IS NOT NULL AND lease_until_ns > \(now))"
        let free = "NOT (\(parked)) AND NOT \(held)"
        func count(_ condition: String) -> String { "sum(CASE WHEN \(condition) THEN 1 ELSE 0 END)" }
        return """
            SELECT handler,
                \(count(StoredPause.isPaused())) AS paused,
                \(count("(\(parked)) AND \(StoredPause.isNotPaused())")) AS parked,
                \(count("NOT (\(parked)) AND \(held)")) AS running,
                \(count("\(free) AND ready_at_ns <= \(now)")) AS due,
                \(count("\(free) AND ready_at_ns > \(now) AND attempts > 0")) AS retrying,
                \(count("\(free) AND ready_at_ns > \(now) AND attempts = 0")) AS scheduled,
                min(CASE WHEN \(free) AND ready_at_ns <= \(now) THEN ready_at_ns END) AS oldest_due,
                \(count("(interval_ns IS NOT NULL OR rule IS NOT NULL) AND due_ns < \(dialect.placeholder(3))")) AS late
            FROM timerkit_timers WHERE namespace = \(dialect.placeholder(1)) GROUP BY handler
            """
    }

    /// `minuend - subtrahend` in SQL, saturating at the ends of the 64-bit range: a stored date
    /// may be any 64-bit value (0.1.0 stored `.distantPast` as -2^63), and PostgreSQL fails a
    /// statement whose `bigint` arithmetic overflows.
    package static func saturatingDifference(_ minuend: String, _ subtrahend: String) -> String {
        """
        (CASE WHEN \(subtrahend) < 0 AND \(minuend) > \(subtrahend) + 9223372036854775807 THEN 9223372036854775807 \
        WHEN \(subtrahend) > 0 AND \(minuend) < \(subtrahend) + (-9223372036854775807 - 1) THEN -9223372036854775807 - 1 \
        ELSE \(minuend) - \(subtrahend) END)
        """
    }

    /// The lateness of a namespace's runs that started at or after placeholder 2, by handler,
    /// oldest first (the last 10,000).
    package static func latenessSQL(dialect: Dialect) -> String {
        """
        SELECT handler, lateness FROM (
            SELECT handler, started_ns, \(saturatingDifference("started_ns", "due_ns")) AS lateness FROM timerkit_runs
            WHERE namespace = \(dialect.placeholder(1)) AND started_ns >= \(dialect.placeholder(2))
            ORDER BY started_ns DESC LIMIT 10000
        ) AS recent ORDER BY started_ns
        """
    }
}
