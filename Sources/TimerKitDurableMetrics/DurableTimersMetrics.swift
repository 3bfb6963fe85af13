import CoreMetrics
import Logging
import TimerKit
import TimerKitDurable

/// Reports what a ``TimerKitDurable/DurableTimers`` runner does as swift-metrics metrics and
/// swift-log messages, for a runner on SQLite or on PostgreSQL.
///
/// ```swift
/// let metrics = DurableTimersMetrics(namespace: "orders")
/// let timers = try await DurableTimers(postgres: configuration, namespace: "orders",
///                                      options: metrics.instrument(DurableTimers.Options()))
/// let sampling = Task { await metrics.sample(timers, every: .seconds(10), lateBy: .seconds(60)) }
/// ```
///
/// Every metric carries the dimension `namespace`:
///
/// | Metric | Kind | Dimensions | What it counts |
/// |---|---|---|---|
/// | `timerkit_durable_claims` | counter | `result`: `claimed`, `missed` | timers a claim took, or found held by another runner, moved or gone |
/// | `timerkit_durable_lag` | timer | `handler` | from an occurrence's due time (store's clock) to its handler's first start |
/// | `timerkit_durable_handler_duration` | timer | `handler`, `outcome` | how long handlers ran |
/// | `timerkit_durable_runs` | counter | `handler`, `outcome`: `completed`, `retrying`, `parked` | handler runs by what became of the occurrence |
/// | `timerkit_durable_retries` | counter | `handler` | runs that threw and will run again |
/// | `timerkit_durable_parked` | counter | `handler` | timers parked as failed |
/// | `timerkit_durable_errors` | counter | `error` (the case's name) | failures the runner met on its own |
/// | `timerkit_durable_loads` | counter | `scope`: `horizon`, `window` | loads of the horizon, and of windows of it that other instances' batches touched |
/// | `timerkit_durable_loaded_timers` | counter | `scope` | timers those loads read (keys and ready times) |
/// | `timerkit_durable_load_duration` | timer | `scope` | how long a load took |
/// | `timerkit_durable_pending` | gauge | | timers in the namespace (at each ``sample(_:lateBy:)``) |
/// | `timerkit_durable_due` | gauge | | occurrences due in this runner, waiting for a claim or a handler slot |
/// | `timerkit_durable_running` | gauge | | handlers running in this runner |
/// | `timerkit_durable_late` | gauge | `handler` | repeating timers whose occurrence is late by more than `lateBy` and has not succeeded (at each ``sample(_:lateBy:)`` given `lateBy`) |
/// | `timerkit_durable_timers` | gauge | `handler`, `status` | timers by status (`scheduled`, `due`, `running`, `retrying`, `parked`, `paused`), likewise |
///
/// Logs: a retry at `warning`, a parked timer and a store failure at `error`, a lost lease at
/// `warning`, each with the key and handler as metadata; starts and claims at `trace`, ends at
/// `debug`.
public final class DurableTimersMetrics: Sendable {
    /// The namespace reported in every metric's dimensions.
    public let namespace: String
    /// Where messages go.
    public let logger: Logger
    private let factory: any MetricsFactory

    /// A reporter for the runner of `namespace`.
    ///
    /// - Parameters:
    ///   - namespace: The runner's namespace, the `namespace` dimension of every metric.
    ///   - logger: Where messages go; a logger labelled `TimerKitDurable` by default.
    ///   - factory: The metrics backend; the one `MetricsSystem.bootstrap` installed by default.
    public init(namespace: String, logger: Logger = Logger(label: "TimerKitDurable"), factory: any MetricsFactory = MetricsSystem.factory) {
        self.namespace = namespace
        self.logger = logger
        self.factory = factory
    }

    /// `options` with this reporter told of every event and error, after what `options` already
    /// did with them.
    public func instrument(_ options: DurableTimers.Options) -> DurableTimers.Options {
        var instrumented = options
        let (onEvent, onError) = (options.onEvent, options.onError)
        instrumented.onEvent = { [self] event in
            onEvent(event)
            record(event)
        }
        instrumented.onError = { [self] error in
            onError(error)
            record(error)
        }
        return instrumented
    }

    /// Records one of the runner's events.
    public func record(_ event: DurableTimerEvent) {
        switch event {
        case .claimed(let requested, let claimed):
            if claimed > 0 { counter("timerkit_durable_claims", ["result": "claimed"]).increment(by: claimed) }
            if requested > claimed { counter("timerkit_durable_claims", ["result": "missed"]).increment(by: requested - claimed) }
            logger.trace("durable timers claimed", metadata: ["namespace": "\(namespace)", "requested": "\(requested)", "claimed": "\(claimed)"])
        case .started(let key, let handler, let attempt, let lateness):
            // An occurrence's lag is its first start's; a retry's start is late by its retry delay,
            // a manual fire ahead of time early.
            if attempt == 1, lateness >= .zero { timer("timerkit_durable_lag", ["handler": handler]).recordNanoseconds(lateness.saturatingNanoseconds) }
            logger.trace(
                "durable timer started",
                metadata: [
                    "namespace": "\(namespace)", "key": "\(key)", "handler": "\(handler)", "attempt": "\(attempt)",
                    "lateness_ns": "\(lateness.saturatingNanoseconds)"
                ])
        case .ended(let key, let handler, let duration, let outcome):
            let name = Self.name(of: outcome)
            timer("timerkit_durable_handler_duration", ["handler": handler, "outcome": name]).recordNanoseconds(max(duration.saturatingNanoseconds, 0))
            counter("timerkit_durable_runs", ["handler": handler, "outcome": name]).increment()
            var metadata: Logger.Metadata = [
                "namespace": "\(namespace)", "key": "\(key)", "handler": "\(handler)", "duration_ns": "\(duration.saturatingNanoseconds)"
            ]
            switch outcome {
            case .completed:
                logger.debug("durable timer completed", metadata: metadata)
            case .retrying(let attempt, let error):
                counter("timerkit_durable_retries", ["handler": handler]).increment()
                metadata["attempt"] = "\(attempt)"
                metadata["error"] = "\(error)"
                logger.warning("durable timer handler failed; it runs again after the retry delay", metadata: metadata)
            case .parked(let error):
                counter("timerkit_durable_parked", ["handler": handler]).increment()
                metadata["error"] = "\(error)"
                logger.error("durable timer parked as failed", metadata: metadata)
            case .cancelled:
                logger.info("durable timer cancelled while its handler ran", metadata: metadata)
            case .released:
                logger.info("durable timer's handler cancelled by the shutdown; its claim was given back", metadata: metadata)
            }
        case .parked(let key, let handler, let reason):
            counter("timerkit_durable_parked", ["handler": handler]).increment()
            logger.error(
                "durable timer parked without a run", metadata: ["namespace": "\(namespace)", "key": "\(key)", "handler": "\(handler)", "error": "\(reason)"])
        case .loaded(let scope, let timers, let duration):
            counter("timerkit_durable_loads", ["scope": scope.rawValue]).increment()
            counter("timerkit_durable_loaded_timers", ["scope": scope.rawValue]).increment(by: timers)
            timer("timerkit_durable_load_duration", ["scope": scope.rawValue]).recordNanoseconds(duration.saturatingNanoseconds)
            logger.debug(
                "durable timers loaded", metadata: ["namespace": "\(namespace)", "scope": "\(scope.rawValue)", "timers": "\(timers)", "duration": "\(duration)"]
            )
        }
    }

    /// Records a failure the runner met on its own.
    public func record(_ error: DurableTimerError) {
        counter("timerkit_durable_errors", ["error": Self.name(of: error)]).increment()
        if case .leaseLost(let key) = error {
            logger.warning("\(error.description)", metadata: ["namespace": "\(namespace)", "key": "\(key)"])
        } else {
            logger.error("\(error.description)", metadata: ["namespace": "\(namespace)"])
        }
    }

    /// Sets the gauges: `timerkit_durable_pending` from a count in the store, `timerkit_durable_due`
    /// and `timerkit_durable_running` from the runner.
    ///
    /// - Throws: The store's ``TimerKitDurable/DurableTimerError`` when it cannot count; the
    ///   runner's gauges are set first.
    ///
    /// - Parameter lateBy: With a value, also counts the namespace's timers by handler and status
    ///   and its late repeating timers (``TimerKitDurable/DurableTimers/stats(lateBy:window:)``,
    ///   one query over the namespace) into `timerkit_durable_timers` and `timerkit_durable_late`.
    public func sample(_ timers: DurableTimers, lateBy: Duration? = nil) async throws(DurableTimerError) {
        gauge("timerkit_durable_due").record(timers.waitingRuns)
        gauge("timerkit_durable_running").record(timers.runningHandlers)
        gauge("timerkit_durable_pending").record(try await timers.count())
        guard let lateBy else { return }
        let stats = try await timers.stats(lateBy: lateBy)
        for handler in stats.handlers {
            gauge("timerkit_durable_late", ["handler": handler.name]).record(handler.late)
            for status in DurableTimerQuery.Status.allCases {
                gauge("timerkit_durable_timers", ["handler": handler.name, "status": status.rawValue]).record(handler.counts[status] ?? 0)
            }
        }
    }

    /// Samples every `interval` of `clock` until the calling task is cancelled; a failed count is
    /// recorded as an error and sampling goes on. With `lateBy`, each sample also counts timers
    /// by status and the late ones (see ``sample(_:lateBy:)``).
    public func sample(_ timers: DurableTimers, every interval: Duration, lateBy: Duration? = nil, clock: any Clock<Duration> = ContinuousClock()) async {
        while !Task.isCancelled {
            do {
                try await sample(timers, lateBy: lateBy)
            } catch {
                record(error)
            }
            do {
                try await clock.sleep(for: interval)
            } catch {
                return
            }
        }
    }

    // MARK: Plumbing

    private func dimensions(_ extra: KeyValuePairs<String, String>) -> [(String, String)] {
        [("namespace", namespace)] + extra.map { ($0.key, $0.value) }
    }

    private func counter(_ label: String, _ extra: KeyValuePairs<String, String>) -> Counter {
        Counter(label: label, dimensions: dimensions(extra), factory: factory)
    }

    private func timer(_ label: String, _ extra: KeyValuePairs<String, String>) -> CoreMetrics.Timer {
        CoreMetrics.Timer(label: label, dimensions: dimensions(extra), factory: factory)
    }

    private func gauge(_ label: String, _ extra: KeyValuePairs<String, String> = [:]) -> Gauge {
        Gauge(label: label, dimensions: dimensions(extra), factory: factory)
    }

    static func name(of outcome: DurableTimerEvent.Outcome) -> String {
        switch outcome {
        case .completed: "completed"
        case .retrying: "retrying"
        case .parked: "parked"
        case .cancelled: "cancelled"
        case .released: "released"
        }
    }

    static func name(of error: DurableTimerError) -> String {
        switch error {
        case .cannotOpen: "cannotOpen"
        case .corrupt: "corrupt"
        case .locked: "locked"
        case .full: "full"
        case .store: "store"
        case .notACalendarClock: "notACalendarClock"
        case .invalidKey: "invalidKey"
        case .unknownHandler: "unknownHandler"
        case .handlerAlreadyRegistered: "handlerAlreadyRegistered"
        case .payload: "payload"
        case .invalidDuration: "invalidDuration"
        case .invalidRule: "invalidRule"
        case .invalidDate: "invalidDate"
        case .keyInUse: "keyInUse"
        case .notFound: "notFound"
        case .leaseLost: "leaseLost"
        case .shutDown: "shutDown"
        case .schema: "schema"
        case .unreachable: "unreachable"
        case .clockSkew: "clockSkew"
        }
    }
}
