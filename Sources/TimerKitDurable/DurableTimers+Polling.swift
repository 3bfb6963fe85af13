// The polling design that job queues use, on the same store and the same claim path, so that the
// benchmark can measure it beside the armed design. Not API.

extension DurableTimers {
    /// Runs every timer ready now, the way a job queue's poll does: one query for the due rows,
    /// then a claim and a run each (at most ``Options/maxConcurrentHandlers`` at once). Returns
    /// how many were found.
    @_spi(Benchmarks)
    public func _pollDueTimers() async throws(DurableTimerError) -> Int {
        let due = try await store.ready(namespace: namespace, by: now(), handlers: runner.handlerNames, after: nil, limit: 100_000)
        await withTaskGroup(of: Void.self) { group in
            for record in due {
                group.addTask { await self.runner.run(record.key, manual: false, timers: self) }
            }
        }
        return due.count
    }
}
