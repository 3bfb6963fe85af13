import ArgumentParser
import Foundation
import TimerKitDurable

/// `timerkit durable stats`.
struct DurableStatsCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Count the namespace's timers by handler and status: what is late or stuck, recent lateness, the instances.",
        usage: """
            timerkit durable stats [--db <database>] [<options>]
            [--late-by <duration>] [--window <duration>]
            """,
        discussion: """
            A line per handler: its timers by status, its late repeating timers (their occurrence \
            came more than --late-by ago and has not succeeded), its oldest due timer, and the \
            lateness of its runs within --window (median, 99th percentile, largest); then the \
            instances that recorded themselves, alive or gone. --json prints the same as one JSON \
            object (instants in ISO 8601, UTC; durations in seconds), for monitoring.
            """)

    @OptionGroup var store: DurableStoreOptions

    @Option(
        help: ArgumentHelp("How late a repeating timer's occurrence must be to count as late.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--late-by") })
    var lateBy: Duration = .seconds(60)

    @Option(
        help: ArgumentHelp("How far back the runs' lateness reaches.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--window") })
    var window: Duration = .seconds(3600)

    @Flag(help: "One JSON object, for scripts and monitoring.")
    var json = false

    func perform() async throws {
        let timers = try await store.open()
        let stats = try await timers.stats(lateBy: lateBy, window: window)
        Output.line(json ? DurableFormat.jsonLine(Self.json(stats)) : stats.description)
    }

    /// The counts as a JSON object.
    static func json(_ stats: DurableTimerStats) -> [String: Any] {
        let seconds = DurableFormat.seconds
        let alive = Set(stats.liveInstances.map(\.id))
        let handlers: [[String: Any]] = stats.handlers.map { handler in
            [
                "name": handler.name,
                "counts": Dictionary(uniqueKeysWithValues: DurableTimerQuery.Status.allCases.map { ($0.rawValue, handler.counts[$0] ?? 0) }),
                "total": handler.total,
                "isPaused": handler.isPaused,
                "late": handler.late,
                "oldestDue": handler.oldestDue.map { DurableFormat.instant($0) as Any } ?? NSNull(),
                "recentRuns": handler.recentRuns,
                "lateness": handler.lateness.map {
                    ["medianSeconds": seconds($0.median), "p99Seconds": seconds($0.p99), "maxSeconds": seconds($0.max)] as Any
                } ?? NSNull()
            ]
        }
        let instances: [[String: Any]] = stats.instances.map { instance in
            [
                "id": instance.id, "host": instance.host, "processID": instance.processID, "handlers": instance.handlers,
                "started": DurableFormat.instant(instance.started), "lastSeen": DurableFormat.instant(instance.lastSeen),
                "intervalSeconds": seconds(instance.interval), "alive": alive.contains(instance.id)
            ]
        }
        return [
            "namespace": stats.namespace, "taken": DurableFormat.instant(stats.taken), "isNamespacePaused": stats.isNamespacePaused,
            "clockOffsetSeconds": seconds(stats.clockOffset), "lateBySeconds": seconds(stats.lateBy), "windowSeconds": seconds(stats.window),
            "totals": Dictionary(uniqueKeysWithValues: DurableTimerQuery.Status.allCases.map { ($0.rawValue, stats.totals[$0] ?? 0) }),
            "handlers": handlers, "instances": instances
        ]
    }
}
