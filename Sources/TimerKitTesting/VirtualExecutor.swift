import Foundation

/// The task executor of a ``VirtualClock`` (SE-0417): one thread of its own that runs the jobs of
/// the tasks that prefer it, in the order they were enqueued, and knows when none is left.
///
/// "None left" — no job queued and none running — is how an async `advance` knows that the code
/// it resumed has run until it is suspended again or finished: every job of that code comes
/// through here, because its tasks prefer this executor, their child tasks inherit the preference,
/// and default actors they call run their jobs on it too.
final class VirtualExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var isRunningJob = false
    private var hasThread = false
    private var isShutDown = false
    private var quiescenceWaiters: [CheckedContinuation<Void, Never>] = []
    /// The executor's thread, for the check that an advance does not wait on itself.
    nonisolated(unsafe) private var thread: Thread?

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        if !hasThread {
            hasThread = true
            let thread = Thread { [self] in runJobs() }
            thread.name = "VirtualClock executor"
            self.thread = thread
            thread.start()
        }
        condition.signal()
        condition.unlock()
    }

    /// Whether the calling thread is the executor's: code on it must not wait for quiescence.
    var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        return thread != nil && thread === Thread.current
    }

    /// Returns once no job is queued and none is running.
    func quiescence() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if next == jobs.count && !isRunningJob {
                condition.unlock()
                continuation.resume()
                return
            }
            quiescenceWaiters.append(continuation)
            condition.unlock()
        }
    }

    /// Lets the thread end once it has run what is queued; a later job starts a new one.
    func shutDown() {
        condition.lock()
        isShutDown = true
        condition.signal()
        condition.unlock()
    }

    private func runJobs() {
        condition.lock()
        while true {
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
                if !quiescenceWaiters.isEmpty {
                    let waiters = quiescenceWaiters
                    quiescenceWaiters.removeAll()
                    condition.unlock()
                    for waiter in waiters { waiter.resume() }
                    condition.lock()
                    continue
                }
                if isShutDown {
                    hasThread = false
                    thread = nil
                    condition.unlock()
                    return
                }
                condition.wait()
                continue
            }
            let job = jobs[next]
            next += 1
            isRunningJob = true
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
            isRunningJob = false
        }
    }
}
