/// A ``DurableTimerQuery``'s conditions in a store's terms (instants in nanoseconds since 1970),
/// written as SQL for either store by ``whereClause(namespace:now:afterKey:dialect:)``.
package struct DurableTimerFilter: Sendable, Hashable {
    package var statuses: Set<DurableTimerQuery.Status> = []
    package var handler: String?
    package var keyPrefix: String?
    package var dueFrom: Int64?
    package var dueBefore: Int64?

    package init(
        statuses: Set<DurableTimerQuery.Status> = [], handler: String? = nil, keyPrefix: String? = nil, dueFrom: Int64? = nil, dueBefore: Int64? = nil
    ) {
        self.statuses = statuses
        self.handler = handler
        self.keyPrefix = keyPrefix
        self.dueFrom = dueFrom
        self.dueBefore = dueBefore
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

        package static let sqlite = Dialect(placeholder: { "?\($0)" }, isParked: "parked <> 0", startsWith: { "substr(key, 1, length(\($0))) = \($0)" })
        package static let postgres = Dialect(placeholder: { "$\($0)" }, isParked: "parked", startsWith: { "starts_with(key, \($0))" })
    }

    /// The `WHERE` conditions of the namespace's timers that match, after `afterKey`, at `now`,
    /// and the values of their placeholders in order.
    package func whereClause(namespace: String, now: Int64, afterKey: String?, dialect: Dialect) -> (sql: String, values: [Value]) {
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
        if !statuses.isEmpty, statuses.count < DurableTimerQuery.Status.allCases.count {
            let now = bind(.integer(now))
            let held = "(lease_until_ns IS NOT NULL AND lease_until_ns > \(now))"
            let free = "NOT (\(dialect.isParked)) AND NOT \(held)"
            let each: [String] = statuses.sorted { $0.rawValue < $1.rawValue }.map { status in
                switch status {
                case .parked: "(\(dialect.isParked))"
                case .running: "(NOT (\(dialect.isParked)) AND \(held))"
                case .due: "(\(free) AND ready_at_ns <= \(now))"
                case .retrying: "(\(free) AND ready_at_ns > \(now) AND attempts > 0)"
                case .scheduled: "(\(free) AND ready_at_ns > \(now) AND attempts = 0)"
                }
            }
            conditions.append("(" + each.joined(separator: " OR ") + ")")
        }
        return (conditions.joined(separator: " AND "), values)
    }
}
