import Dispatch

/// A task executor on a serial dispatch queue of its own (SE-0417): the SQLite store's blocking
/// calls run there, so that a write waiting out another connection's lock (up to the busy timeout)
/// holds one of Dispatch's worker threads, never a thread of Swift's cooperative pool, which the
/// application's tasks and the runner's own renewals share.
final class DispatchTaskExecutor: TaskExecutor, @unchecked Sendable {
    // Immutable after init; DispatchQueue is thread-safe.
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
