import Foundation

/// A namespace's durable timers at a glance (``DurableTimers/stats(lateBy:window:)``): counts by
/// handler and status, what is late or stuck, the lateness of recent runs, the instances alive.
public struct DurableTimerStats: Sendable, Hashable, CustomStringConvertible {
    /// One handler's timers.
    public struct Handler: Sendable, Hashable {
        /// The handler's name.
        public let name: String
        /// Its timers by status.
        public let counts: [DurableTimerQuery.Status: Int]
        /// Whether the handler is paused (its timers are held out until it is resumed).
        public let isPaused: Bool
        /// When the longest-waiting of its due timers became ready: the head of its backlog.
        public let oldestDue: Date?
        /// Its repeating timers whose occurrence came more than ``DurableTimerStats/lateBy`` ago
        /// and has not succeeded (whatever holds them: no runner, retries, a park, a pause).
        public let late: Int
        /// Its runs that started within ``DurableTimerStats/window`` (the history's, up to 10,000).
        public let recentRuns: Int
        /// The median, 99th percentile and largest lateness of those runs (`nil` without runs).
        public let lateness: (median: Duration, p99: Duration, max: Duration)?

        /// All its timers.
        public var total: Int { counts.values.reduce(0, +) }

        public static func == (lhs: Handler, rhs: Handler) -> Bool {
            lhs.name == rhs.name && lhs.counts == rhs.counts && lhs.isPaused == rhs.isPaused && lhs.oldestDue == rhs.oldestDue && lhs.late == rhs.late
                && lhs.recentRuns == rhs.recentRuns && lhs.lateness?.median == rhs.lateness?.median && lhs.lateness?.p99 == rhs.lateness?.p99
                && lhs.lateness?.max == rhs.lateness?.max
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(name)
            hasher.combine(counts)
            hasher.combine(late)
            hasher.combine(recentRuns)
        }
    }

    /// The namespace counted.
    public let namespace: String
    /// When, on the durable clock.
    public let taken: Date
    /// Each handler that has timers, has run within the window, or is paused, by name.
    public let handlers: [Handler]
    /// The runners that recorded themselves (see ``DurableInstance``).
    public let instances: [DurableInstance]
    /// Whether the whole namespace is paused.
    public let isNamespacePaused: Bool
    /// The store's clock minus this host's (PostgreSQL measures it; 0 for SQLite).
    public let clockOffset: Duration
    /// How late a repeating timer's occurrence must be to count as ``Handler/late``.
    public let lateBy: Duration
    /// How far back ``Handler/recentRuns`` reach.
    public let window: Duration

    /// Every handler's counts added up, by status.
    public var totals: [DurableTimerQuery.Status: Int] {
        handlers.reduce(into: [:]) { totals, handler in
            for (status, count) in handler.counts { totals[status, default: 0] += count }
        }
    }

    /// The instances seen alive at ``taken``.
    public var liveInstances: [DurableInstance] { instances.filter { $0.isAlive(at: taken.nanosecondsSince1970) } }

    package init(
        namespace: String, taken: Int64, counts: [DurableHandlerCounts], instances: [DurableInstance], pausedHandlers: Set<String>,
        isNamespacePaused: Bool, clockOffset: Duration, lateBy: Duration, window: Duration
    ) {
        self.namespace = namespace
        self.taken = Date(nanosecondsSince1970: taken)
        var byName = Dictionary(uniqueKeysWithValues: counts.map { ($0.handler, $0) })
        for name in pausedHandlers where byName[name] == nil { byName[name] = DurableHandlerCounts(handler: name) }
        self.handlers = byName.values.sorted { $0.handler < $1.handler }.map { entry in
            let sorted = entry.lateness.sorted()
            func at(_ fraction: Double) -> Duration {
                .nanoseconds(sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded(.up)))])
            }
            return Handler(
                name: entry.handler, counts: entry.counts.filter { $0.value > 0 }, isPaused: pausedHandlers.contains(entry.handler),
                oldestDue: entry.oldestDue.map { Date(nanosecondsSince1970: $0) }, late: entry.late, recentRuns: sorted.count,
                lateness: sorted.isEmpty ? nil : (at(0.5), at(0.99), .nanoseconds(sorted.last!)))
        }
        self.instances = instances
        self.isNamespacePaused = isNamespacePaused
        self.clockOffset = clockOffset
        self.lateBy = lateBy
        self.window = window
    }

    /// A report to read at a terminal: a line per handler, then the instances.
    public var description: String {
        let statuses: [DurableTimerQuery.Status] = [.scheduled, .due, .running, .retrying, .parked, .paused]
        var lines = ["namespace \(namespace)\(isNamespacePaused ? " (paused)" : "") at \(DurableTimerText.instant(taken))"]
        let header = ["handler"] + statuses.map(\.rawValue) + ["late", "oldest due", "runs", "lateness p50/p99/max"]
        var rows: [[String]] = []
        for handler in handlers {
            let lateness = handler.lateness.map {
                "\(DurableTimerText.duration($0.median))/\(DurableTimerText.duration($0.p99))/\(DurableTimerText.duration($0.max))"
            }
            rows.append(
                [handler.name + (handler.isPaused ? " (paused)" : "")] + statuses.map { String(handler.counts[$0] ?? 0) }
                    + [String(handler.late), handler.oldestDue.map(DurableTimerText.instant) ?? "-", String(handler.recentRuns), lateness ?? "-"])
        }
        let totals = totals
        rows.append(["total"] + statuses.map { String(totals[$0] ?? 0) } + [String(handlers.map(\.late).reduce(0, +)), "", "", ""])
        lines += DurableTimerText.table(header: header, rows: rows)
        let live = liveInstances
        lines.append("")
        lines.append("instances: \(live.count) alive of \(instances.count) recorded; clock offset \(DurableTimerText.duration(clockOffset))")
        for instance in instances {
            let alive = instance.isAlive(at: taken.nanosecondsSince1970) ? "alive" : "gone"
            lines.append(
                "  \(instance.id)  \(instance.host) pid \(instance.processID)  \(alive), last seen \(DurableTimerText.instant(instance.lastSeen))  handlers: \(instance.handlers.joined(separator: ", "))"
            )
        }
        return lines.joined(separator: "\n")
    }
}
