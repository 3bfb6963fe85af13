// The polling design that job queues use, on the same store and the same claim path, so that the
// benchmark can measure it beside the armed design. Not API.

extension DurableTimers {
    /// Runs every timer ready now, the way a job queue's poll does: a query for the due rows, then
    /// claims of them in batches (the runner's own claim), and a run of each, at most
    /// ``Options/maxConcurrentHandlers`` at once. Returns how many were found.
    @_spi(Benchmarks)
    public func _pollDueTimers() async throws(DurableTimerError) -> Int {
        let now = now()
        let due = try await store.ready(namespace: namespace, by: now, handlers: runner.handlerNames, after: nil, limit: 100_000)
        let batch = options.maxConcurrentHandlers
        for start in stride(from: 0, to: due.count, by: batch) {
            let keys = due[start..<min(start + batch, due.count)].map(\.key)
            let claimed = try await store.claim(
                namespace: namespace, keys: keys, owner: owner, now: now, leaseUntil: now.addingSaturating(options.lease.saturatingNanoseconds)
            ).claimed
            await withTaskGroup(of: Void.self) { group in
                for record in claimed {
                    group.addTask { await self.runner.execute(record, manual: false, now: now, timers: self) }
                }
            }
        }
        return due.count
    }
}
