import Foundation
import TimerKitDurable
import Tracing

/// Durable timers traced with swift-distributed-tracing: a span around each schedule, and one
/// around each run of a handler that continues the trace of the request that scheduled it — in
/// another process of the fleet, after a restart, days later.
///
/// ```swift
/// var options = DurableTimers.Options()
/// options.instrumentation = DurableTimerTracing()
/// let timers = try DurableTimers(path: "timers.sqlite", options: options)
///
/// // In a request handler, inside the request's span:
/// try await timers.schedule(key: "order/42/expiry", after: .seconds(1_800), handler: "order.expire", payload: order)
/// ```
///
/// - **Schedule**: a span `schedule <handler>` (kind `producer`), a child of the caller's current
///   span (the task-local `ServiceContext`). Its context is injected with the tracer's
///   propagator — W3C `traceparent` and `tracestate` with swift-otel's — and stored with the
///   timer (every timer of a batch), in the same write.
/// - **Run**: a span `fire <handler>` (kind `consumer`) around the handler, current while it
///   runs, so that the handler's own spans are its children. A one-shot's run (each attempt of it,
///   and a `runNow(key:)` of it) is a child of the schedule's span: the request's trace goes on. A
///   repeating timer's run, and a manual `fire(key:)` (which stands for no occurrence), starts a
///   trace of its own with a link to the schedule's span — a daily timer scheduled once would
///   otherwise grow one trace for ever.
/// - **Timing**: a schedule's span ends when its write returns; inside an application's
///   transaction that is before the commit, so a schedule the transaction then rolls back still
///   shows as written. A handler that outlives its timeout and ignores the cancellation ends its
///   span when it returns, as it returns.
/// - **Failure**: a handler that throws (or times out) records the error and sets the span's
///   status to error; a schedule that fails records its ``DurableTimerError``.
///
/// Attributes (OpenTelemetry's messaging conventions where they fit): `timerkit.timer.key`,
/// `timerkit.timer.handler`, `timerkit.timer.namespace`, `timerkit.timer.repeats`,
/// `timerkit.timer.deadline` (ISO 8601), `timerkit.schedule.count` (a batch's size), and for a run
/// `timerkit.fire.attempt`, `timerkit.fire.sequence`, `timerkit.fire.lateness_ms`,
/// `timerkit.fire.deadline_count` and `messaging.message.id` (the fire's idempotency key).
public struct DurableTimerTracing: DurableTimerInstrumentation {
    private let tracer: (any Tracer)?

    /// Traces with `tracer`, or with the one bootstrapped in `InstrumentationSystem` at each
    /// call (the default: a no-op tracer until the application bootstraps one).
    public init(tracer: (any Tracer)? = nil) {
        self.tracer = tracer
    }

    public func startScheduling(_ scheduling: DurableScheduling) -> DurableSchedulingSpan {
        let tracer = self.tracer ?? InstrumentationSystem.tracer
        let span = tracer.startSpan("schedule \(scheduling.handler)", context: ServiceContext.current ?? .topLevel, ofKind: .producer)
        Self.describe(scheduling, in: span)
        if scheduling.count != 1 { span.attributes["timerkit.schedule.count"] = scheduling.count }
        var headers: [String: String] = [:]
        tracer.inject(span.context, into: &headers, using: HeadersInjector())
        return DurableSchedulingSpan(traceContext: headers) { error in
            if let error {
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error, message: error.description))
            }
            span.end()
        }
    }

    public func run(_ fire: DurableFire, of timer: DurableScheduling, traceContext: [String: String], _ body: () async throws -> Void) async throws {
        let tracer = self.tracer ?? InstrumentationSystem.tracer
        var scheduled = ServiceContext.topLevel
        if !traceContext.isEmpty { tracer.extract(traceContext, into: &scheduled, using: HeadersExtractor()) }
        // A one-shot continues the schedule's trace; a repeating timer's runs each start their own.
        let continues = !timer.repeats && !fire.isManual
        try await tracer.withSpan("fire \(timer.handler)", context: continues ? scheduled : .topLevel, ofKind: .consumer) { span in
            // Linked only to a context the stored headers gave (none for headers that did not read).
            if !continues && !scheduled.isEmpty { span.addLink(SpanLink(context: scheduled, attributes: [:])) }
            Self.describe(timer, in: span)
            span.attributes["timerkit.fire.attempt"] = fire.attempt
            span.attributes["timerkit.fire.sequence"] = Int(clamping: fire.sequence)
            span.attributes["timerkit.fire.lateness_ms"] =
                Double(fire.lateness.components.seconds) * 1_000 + Double(fire.lateness.components.attoseconds) / 1e15
            span.attributes["timerkit.fire.deadline_count"] = fire.deadlineCount
            span.attributes["messaging.message.id"] = fire.idempotencyKey
            try await body()
        }
    }

    private static func describe(_ timer: DurableScheduling, in span: any Span) {
        span.attributes["timerkit.timer.namespace"] = timer.namespace
        span.attributes["timerkit.timer.key"] = timer.key
        span.attributes["timerkit.timer.handler"] = timer.handler
        span.attributes["timerkit.timer.repeats"] = timer.repeats
        span.attributes["timerkit.timer.deadline"] = timer.deadline.formatted(.iso8601)
    }
}

/// Writes a context's propagation headers into the dictionary stored with a timer.
private struct HeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout [String: String]) {
        headers[key] = value
    }
}

/// Reads a context's propagation headers from the dictionary stored with a timer.
private struct HeadersExtractor: Extractor {
    func extract(key: String, from headers: [String: String]) -> String? {
        headers[key]
    }
}
