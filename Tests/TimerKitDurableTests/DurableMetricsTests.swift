import Foundation
import Logging
import MetricsTestKit
import Testing
import TimerKitDurableMetrics
import TimerKitTesting

@testable import TimerKit
@testable import TimerKitDurable

/// The runner's events as metrics and logs (`TimerKitDurableMetrics`), exactly, on a virtual clock.
@Suite("Durable timers: metrics and logs")
struct DurableMetricsTests {
    /// A log handler that keeps what it is told.
    final class Messages: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [(level: Logger.Level, message: String, metadata: Logger.Metadata)] = []

        func append(_ level: Logger.Level, _ message: String, _ metadata: Logger.Metadata) { lock.withLock { lines.append((level, message, metadata)) } }
        var all: [(level: Logger.Level, message: String, metadata: Logger.Metadata)] { lock.withLock { lines } }
    }

    struct Collecting: LogHandler {
        let messages: Messages
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            messages.append(event.level, event.message.description, event.metadata ?? [:])
        }
    }

    struct Declined: Error, CustomStringConvertible { var description: String { "declined" } }

    @Test(
        "Claims, lag, handler runs by outcome, retries, parked failures, errors and the pending, due and running gauges are reported exactly; a retry logs a warning and a parked timer an error"
    )
    func reportsEverything() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let metrics = TestMetrics()
        let messages = Messages()
        let reporter = DurableTimersMetrics(namespace: "default", logger: Logger(label: "test") { _ in Collecting(messages: messages) }, factory: metrics)
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: reporter.instrument(exactOptions { $0.maxAttempts = 2 }))
        try await timers.register("ok", payload: Note.self) { _, _ in try await Task.sleep(for: .seconds(2), clock: virtual.clock) }
        try await timers.register("charge", payload: Note.self) { _, _ in throw Declined() }
        await timers.start()
        try await timers.schedule(key: "a", at: at(10), handler: "ok", payload: Note(text: "a"))
        try await timers.schedule(key: "b", at: at(10), handler: "charge", payload: Note(text: "b"))
        try await timers.schedule(key: "c", at: at(100), handler: "ok", payload: Note(text: "c"))
        try await timers.schedule(key: "late", at: at(10.25), handler: "ok", payload: Note(text: "late"))
        // Another runner takes "c" at 95 s, after this one armed it, and holds it until 200 s: this
        // runner's claim at 100 s misses it.
        await virtual.advance(to: TimerInstant(kind: .virtual, nanoseconds: epoch + 95_000_000_000))
        let now = virtual.now.nanoseconds
        #expect(
            try await timers.store.claim(namespace: "default", key: "c", owner: "other", now: now, leaseUntil: epoch + 200_000_000_000, early: true).record
                != nil)
        await virtual.advance(to: TimerInstant(kind: .virtual, nanoseconds: epoch + 100_000_000_000))

        let claimed = metrics.counterTotal(label: "timerkit_durable_claims", dimensions: [("namespace", "default"), ("result", "claimed")])
        let missed = metrics.counterTotal(label: "timerkit_durable_claims", dimensions: [("namespace", "default"), ("result", "missed")])
        #expect(claimed == 4 && missed == 1, "a, b twice and late claimed; c missed")
        let lag = try metrics.expectTimer("timerkit_durable_lag", [("namespace", "default"), ("handler", "ok")])
        #expect(lag.values.sorted() == [0, 0], "a and late started at their due times")
        #expect(
            try metrics.expectTimer("timerkit_durable_lag", [("namespace", "default"), ("handler", "charge")]).values == [0], "the retry's start is not lag")
        #expect(
            try metrics.expectTimer("timerkit_durable_handler_duration", [("namespace", "default"), ("handler", "ok"), ("outcome", "completed")]).values == [
                2_000_000_000, 2_000_000_000
            ])
        #expect(metrics.counterTotal(label: "timerkit_durable_runs", dimensions: [("namespace", "default"), ("handler", "ok"), ("outcome", "completed")]) == 2)
        #expect(
            metrics.counterTotal(label: "timerkit_durable_runs", dimensions: [("namespace", "default"), ("handler", "charge"), ("outcome", "retrying")]) == 1)
        #expect(metrics.counterTotal(label: "timerkit_durable_runs", dimensions: [("namespace", "default"), ("handler", "charge"), ("outcome", "parked")]) == 1)
        #expect(metrics.counterTotal(label: "timerkit_durable_retries", dimensions: [("namespace", "default"), ("handler", "charge")]) == 1)
        #expect(metrics.counterTotal(label: "timerkit_durable_parked", dimensions: [("namespace", "default"), ("handler", "charge")]) == 1)

        try await reporter.sample(timers)
        #expect(try metrics.expectGauge("timerkit_durable_pending", [("namespace", "default")]).lastValue == 2, "c, and b parked")
        #expect(try metrics.expectGauge("timerkit_durable_due", [("namespace", "default")]).lastValue == 0)
        #expect(try metrics.expectGauge("timerkit_durable_running", [("namespace", "default")]).lastValue == 0)

        let warnings = messages.all.filter { $0.level == .warning }
        let errors = messages.all.filter { $0.level == .error }
        #expect(
            warnings.count == 1 && warnings.first?.metadata["key"] == "b" && warnings.first?.metadata["error"] == "declined"
                && warnings.first?.metadata["attempt"] == "1")
        #expect(errors.count == 1 && errors.first?.message == "durable timer parked as failed" && errors.first?.metadata["key"] == "b")

        // A failure the runner meets on its own is counted by its case and logged.
        reporter.record(DurableTimerError.leaseLost("c"))
        #expect(metrics.counterTotal(label: "timerkit_durable_errors", dimensions: [("namespace", "default"), ("error", "leaseLost")]) == 1)
        #expect(messages.all.filter { $0.level == .warning }.count == 2)
        await timers.shutdown()
    }

    @Test("The due and running gauges count a runner's backlog: with one handler slot, a second timer due at the same time waits while the first runs")
    func gaugesCountTheBacklog() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let metrics = TestMetrics()
        let reporter = DurableTimersMetrics(namespace: "default", factory: metrics)
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: reporter.instrument(exactOptions { $0.maxConcurrentHandlers = 1 }))
        try await timers.register("slow", payload: Note.self) { _, _ in try await Task.sleep(for: .seconds(5), clock: virtual.clock) }
        await timers.start()
        try await timers.schedule([(key: "x", at: at(10), payload: Note(text: "x")), (key: "y", at: at(10), payload: Note(text: "y"))], handler: "slow")
        await virtual.advance(by: .seconds(10))
        try await reporter.sample(timers)
        #expect(try metrics.expectGauge("timerkit_durable_running", [("namespace", "default")]).lastValue == 1)
        #expect(try metrics.expectGauge("timerkit_durable_due", [("namespace", "default")]).lastValue == 1)
        #expect(try metrics.expectGauge("timerkit_durable_pending", [("namespace", "default")]).lastValue == 2)
        await virtual.advance(by: .seconds(10))
        try await reporter.sample(timers)
        #expect(try metrics.expectGauge("timerkit_durable_running", [("namespace", "default")]).lastValue == 0)
        #expect(try metrics.expectGauge("timerkit_durable_due", [("namespace", "default")]).lastValue == 0)
        #expect(try metrics.expectGauge("timerkit_durable_pending", [("namespace", "default")]).lastValue == 0)
        await timers.shutdown()
    }

    @Test(
        "The late gauge counts a repeating timer whose occurrence has not succeeded within its grace, by handler; the timers gauge counts by status; both fall back when it runs"
    )
    func lateGauge() async throws {
        let database = try TemporaryDatabase()
        let virtual = makeVirtualClock()
        let metrics = TestMetrics()
        let reporter = DurableTimersMetrics(namespace: "default", factory: metrics)
        let timers = try DurableTimers(path: database.path, clock: virtual.clock, options: reporter.instrument(exactOptions()))
        try await timers.register("report", payload: Note.self) { _, _ in }
        await timers.start()
        try await timers.schedule(key: "hourly", every: .seconds(3_600), first: at(60), handler: "report", payload: Note(text: "x"))
        try await timers.pause(key: "hourly")
        await virtual.advance(by: .seconds(100))  // its occurrence at 60 is 40 s late
        try await reporter.sample(timers, lateBy: .seconds(30))
        #expect(try metrics.expectGauge("timerkit_durable_late", [("namespace", "default"), ("handler", "report")]).lastValue == 1)
        #expect(try metrics.expectGauge("timerkit_durable_timers", [("namespace", "default"), ("handler", "report"), ("status", "paused")]).lastValue == 1)
        try await timers.resume(key: "hourly")
        await virtual.advance(by: .zero)
        #expect(try await timers.timer(key: "hourly")?.nextDeadline == at(3_660))
        try await reporter.sample(timers, lateBy: .seconds(30))
        #expect(try metrics.expectGauge("timerkit_durable_late", [("namespace", "default"), ("handler", "report")]).lastValue == 0)
        #expect(try metrics.expectGauge("timerkit_durable_timers", [("namespace", "default"), ("handler", "report"), ("status", "scheduled")]).lastValue == 1)
        await timers.shutdown()
    }
}
