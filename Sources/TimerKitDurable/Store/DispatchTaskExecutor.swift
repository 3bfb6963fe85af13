import Dispatch

/// A task executor on a serial dispatch queue of its own (SE-0417): the SQLite store's blocking
/// calls run there, so that a write waiting out another connection's lock (up to the busy timeout)
/// holds one of Dispatch's worker threads, never a thread of Swift's cooperative pool, which the
/// application's tasks share. The runner's renewals, and the PostgreSQL store's calls that keep
/// claims alive, run on executors of this kind too: handlers that block or spin on every core of
/// the cooperative pool cannot hold them back past a lease.
package final class DispatchTaskExecutor: TaskExecutor, @unchecked Sendable {
    // Immutable after init; DispatchQueue is thread-safe.
    private let queue: DispatchQueue

    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
