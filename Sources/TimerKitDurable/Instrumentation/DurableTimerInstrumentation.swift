/// What follows durable timers for a tracing system: a span around each schedule, one around each
/// run, and the schedule's context stored with the timer, so that a run continues the trace of
/// the request that scheduled it — in another process, after a restart, days later.
///
/// TimerKitDurableTracing's `DurableTimerTracing` implements it with swift-distributed-tracing
/// (any tracer bootstrapped in `InstrumentationSystem`, swift-otel's included); implement it for
/// another system. Set it in ``DurableTimers/Options/instrumentation``; without one, nothing is
/// called and nothing extra is stored.
///
/// ```swift
/// var options = DurableTimers.Options()
/// options.instrumentation = DurableTimerTracing()
/// let timers = try DurableTimers(path: "timers.sqlite", options: options)
/// ```
///
/// The trace context is stored in the timer's row as text (at most
/// ``DurableTimers/maximumTraceContextSize`` bytes; a larger one is not stored, and the run starts
/// a trace of its own). A replacing schedule stores its own; a reschedule, a pause or a retry keeps
/// the one stored. A row whose stored context does not read is run without one: nothing stored
/// stops a run.
public protocol DurableTimerInstrumentation: Sendable {
    /// Starts the span of a schedule, called once its arguments are checked and before its write;
    /// the returned span's ``DurableSchedulingSpan/traceContext`` is stored with the timer (with
    /// every timer of a batch), and the span is ended once the write has returned or failed.
    func startScheduling(_ scheduling: DurableScheduling) -> DurableSchedulingSpan

    /// Runs `body` — the handler of one claimed occurrence — inside the run's span.
    ///
    /// `traceContext` is what ``startScheduling(_:)`` returned when the timer was scheduled (empty
    /// when none was stored). The implementation must call `body` exactly once and rethrow what it
    /// throws unchanged: the runner tells a payload that did not decode from a failed handler by
    /// the error's type.
    ///
    /// - Parameters:
    ///   - fire: The occurrence being run, as the handler receives it.
    ///   - timer: The timer: its key, handler and whether it repeats.
    ///   - traceContext: The context stored by the schedule.
    ///   - body: The handler's run.
    func run(_ fire: DurableFire, of timer: DurableScheduling, traceContext: [String: String], _ body: () async throws -> Void) async throws
}
