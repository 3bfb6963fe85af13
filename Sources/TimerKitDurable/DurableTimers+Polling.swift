import Foundation
import TimerKit

// The polling design that job queues use, on the same store and the same claim statement, so that
// the benchmark can measure it beside the armed design. Not API.

extension DurableTimers {
    /// Runs every timer ready now, the way a job queue's poll does: a query for the due rows, then
    /// claims of them in batches (the runner's own claim statement), and a run of each, at most
    /// ``Options/maxConcurrentHandlers`` at once, each one-shot removed after its run. Returns how
    /// many were found. (Short handlers only: a poll holds no renewals.)
    @_spi(Benchmarks)
    public func _pollDueTimers() async throws(DurableTimerError) -> Int {
        let now = now()
        let due = try await store.ready(namespace: namespace, by: now, handlers: runner.handlerNames, after: nil, limit: 100_000)
        let batch = options.maxConcurrentHandlers
        for start in stride(from: 0, to: due.count, by: batch) {
            let token = "\(owner)/poll-\(UUID().uuidString)"
            let keys = due[start..<min(start + batch, due.count)].map(\.key)
            let claimed = try await store.claim(
                namespace: namespace, keys: keys, owner: token, now: now, leaseUntil: now.addingSaturating(options.lease.saturatingNanoseconds)
            ).claimed
            let completed = await withTaskGroup(of: DurableCompletion?.self) { group in
                for record in claimed {
                    group.addTask {
                        guard let registered = self.runner.handler(record.handler) else { return nil }
                        let fire = DurableFire(
                            namespace: self.namespace, key: record.key, scheduledDeadline: Date(nanosecondsSince1970: record.due),
                            firedAt: Date(nanosecondsSince1970: now), deadlineCount: 1, skippedDeadlineCount: record.skipped, attempt: record.attempts,
                            sequence: record.sequence)
                        guard (try? await registered.handler(record.payload, fire)) != nil else { return nil }
                        return DurableCompletion(key: record.key, owner: token, sequence: record.sequence)
                    }
                }
                var completed: [DurableCompletion] = []
                for await completion in group { if let completion { completed.append(completion) } }
                return completed
            }
            _ = try await store.finishAll(namespace: namespace, completed: completed)
        }
        return due.count
    }
}
