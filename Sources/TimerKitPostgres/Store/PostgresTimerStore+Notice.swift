import Foundation
import PostgresNIO
import TimerKit

extension PostgresTimerStore {
    /// The channel of a namespace's notifications: `timerkit_` and 16 hexadecimal digits of the
    /// namespace's FNV-1a hash, so that an instance hears its own namespace's changes only (the
    /// payload names the namespace too: a collision costs a decode, never a wrong arm). Lowercase:
    /// `LISTEN` names are case-sensitive.
    static func channel(for namespace: String) -> String {
        let digits = String(StableHash.fnv1a(namespace.utf8), radix: 16)
        return "timerkit_" + String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// One notification's payload: what a write tells every instance listening on its namespace's
    /// channel. The statements build it with `json_build_object` from the fragments below, and the
    /// listener decodes it here: both sides take the field names from ``Field``.
    ///
    /// The names on the wire are one or two letters: every instance decodes every notification of
    /// its namespace, and a notification holds at most 8,000 bytes. Instances of different releases
    /// share a channel, so a name here never changes; a new field gets a new name.
    struct Notice: Decodable {
        enum Field: String, CodingKey {
            /// The namespace (every notice): a channel's hash may collide, the namespace does not.
            case namespace = "n"
            /// A timer's key, with `readyAt` and `handler`: the timer is ready then.
            case key = "k"
            case readyAt = "r"
            case handler = "h"
            /// With `key`: the timer was removed.
            case removed = "x"
            /// A batch's window of ready times, from and through: load it.
            case windowFrom = "wf"
            case windowThrough = "wt"
            /// Load the horizon again (a resume: many timers may be ready).
            case reload
            /// A liveness check's token: the instance that sent it expects it back on its
            /// listening connection.
            case probe = "p"
        }

        var namespace: String
        var key: String?
        var readyAt: Int64?
        var handler: String?
        var removed: Bool?
        var windowFrom: Int64?
        var windowThrough: Int64?
        var reload: Bool?
        var probe: String?

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: Field.self)
            namespace = try fields.decode(String.self, forKey: .namespace)
            key = try fields.decodeIfPresent(String.self, forKey: .key)
            readyAt = try fields.decodeIfPresent(Int64.self, forKey: .readyAt)
            handler = try fields.decodeIfPresent(String.self, forKey: .handler)
            removed = try fields.decodeIfPresent(Bool.self, forKey: .removed)
            windowFrom = try fields.decodeIfPresent(Int64.self, forKey: .windowFrom)
            windowThrough = try fields.decodeIfPresent(Int64.self, forKey: .windowThrough)
            reload = try fields.decodeIfPresent(Bool.self, forKey: .reload)
            probe = try fields.decodeIfPresent(String.self, forKey: .probe)
        }

        /// SQL: a `json_build_object(…)::text` of `fields`, each a field and an SQL expression for
        /// its value (a column, a literal, an aggregate). Constant text: a value from outside goes
        /// in as a bind in the expression, never as text.
        static func payload(_ fields: KeyValuePairs<Field, String>) -> String {
            "json_build_object(" + fields.map { "'\($0.key.rawValue)', \($0.value)" }.joined(separator: ", ") + ")::text"
        }

        /// SQL: the payload of a row that is ready, from the columns of the row the statement wrote.
        static let ready = payload([.namespace: "namespace", .key: "key", .readyAt: "ready_at_ns", .handler: "handler"])
        /// SQL: the payload of a row that was removed, from its columns.
        static let removal = payload([.namespace: "namespace", .key: "key", .removed: "true"])
        /// SQL: the payload of a batch's rows, grouped by namespace: the window of their ready times.
        static let window = payload([.namespace: "namespace", .windowFrom: "min(ready_at_ns)", .windowThrough: "max(ready_at_ns)"])
    }

    /// `SELECT pg_notify(…)` on `namespace`'s channel of a payload naming the namespace and one
    /// more field: `value` (bound), or `true` without one.
    static func notifyStatement(namespace: String, _ field: Notice.Field, value: String? = nil) -> PostgresQuery {
        let (name, extra) = (Notice.Field.namespace.rawValue, field.rawValue)
        guard let value else {
            return
                "SELECT pg_notify(\(channel(for: namespace)), json_build_object('\(unescaped: name)', \(namespace)::text, '\(unescaped: extra)', true)::text)"
        }
        return
            "SELECT pg_notify(\(channel(for: namespace)), json_build_object('\(unescaped: name)', \(namespace)::text, '\(unescaped: extra)', \(value)::text)::text)"
    }
}
