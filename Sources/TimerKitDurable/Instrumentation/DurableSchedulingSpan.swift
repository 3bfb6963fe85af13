/// The span of one schedule, as ``DurableTimerInstrumentation/startScheduling(_:)`` started it:
/// the context to store with the timer, and how to end the span.
public struct DurableSchedulingSpan: Sendable {
    /// The propagation headers of the span's context (W3C `traceparent` and `tracestate` with
    /// swift-otel's propagator), stored with the timer and given back to each of its runs.
    public var traceContext: [String: String]
    private let ending: @Sendable (DurableTimerError?) -> Void

    /// Makes the span of a schedule.
    /// - Parameters:
    ///   - traceContext: The context to store with the timer.
    ///   - end: Ends the span: called once, with the schedule's error if it failed.
    public init(traceContext: [String: String], end: @escaping @Sendable (_ error: DurableTimerError?) -> Void) {
        self.traceContext = traceContext
        self.ending = end
    }

    /// Ends the span, recording `error` if the schedule failed.
    public func end(throwing error: DurableTimerError? = nil) {
        ending(error)
    }
}
