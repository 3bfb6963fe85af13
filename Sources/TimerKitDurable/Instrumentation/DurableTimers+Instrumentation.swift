import Foundation

// Where the runner calls its instrumentation: around each schedule's write (here) and around each
// handler's run (DurableTimers+RunnerHandlers).

extension DurableTimers {
    /// Writes `records` (one schedule, or a batch for one handler) with `write`, inside the
    /// instrumentation's span of the schedule, each record carrying the span's context; just
    /// `write` without an instrumentation.
    func traced<T>(_ records: [DurableTimerRecord], _ write: ([DurableTimerRecord]) async throws(DurableTimerError) -> T) async throws(DurableTimerError)
        -> T
    {
        guard let (span, records) = startScheduling(records) else { return try await write(records) }
        do {
            let result = try await write(records)
            span.end()
            return result
        } catch {
            span.end(throwing: error)
            throw error
        }
    }

    /// ``traced(_:_:)`` for a write inside the application's own transaction (synchronous).
    func traced<T>(_ record: DurableTimerRecord, _ write: (DurableTimerRecord) throws(DurableTimerError) -> T) throws(DurableTimerError) -> T {
        guard let (span, records) = startScheduling([record]) else { return try write(record) }
        do {
            let result = try write(records[0])
            span.end()
            return result
        } catch {
            span.end(throwing: error)
            throw error
        }
    }

    /// The span of a schedule of `records`, and the records with its context; `nil` without an
    /// instrumentation.
    private func startScheduling(_ records: [DurableTimerRecord]) -> (DurableSchedulingSpan, [DurableTimerRecord])? {
        guard let instrumentation = options.instrumentation, let first = records.first else { return nil }
        let deadline = records.lazy.map(\.due).min() ?? first.due
        let span = instrumentation.startScheduling(
            DurableScheduling(
                namespace: namespace, key: first.key, count: records.count, handler: first.handler, repeats: first.recurrence != .none,
                deadline: Date(nanosecondsSince1970: deadline)))
        var records = records
        for index in records.indices { records[index].traceContext = span.traceContext }
        return (span, records)
    }
}
