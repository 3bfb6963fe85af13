import CBenchShims

/// The measured loop of churn and reset: `step` runs on the peer's scheduling thread until
/// `operations` were done or `timeLimit` has passed, with a deadline `ahead` of now that is
/// refreshed once per 1,024 steps (a clock read, about 25 ns here, is not part of what is
/// measured). Returns the steps done, the loop's wall time and the scheduling thread's CPU time.
enum TimedLoop {
    @inline(__always)
    static func run<P: Peer>(
        _ peer: P, operations: Int, timeLimit: Int64, ahead: Int64,
        _ step: @escaping @Sendable (_ done: Int, _ deadline: Int64) throws -> Void
    ) throws -> (ops: Int, wall: Int64, threadCPU: Int64) {
        let result = Box<(ops: Int, wall: Int64, threadCPU: Int64)>((0, 0, 0))
        let failure = Box<(any Error)?>(nil)
        peer.onSchedulingThread {
            let began = KernelClock.monotonic()
            let threadCPU = cbench_thread_cpu_ns()
            var done = 0
            var deadline = peer.now() + ahead
            do {
                while done < operations {
                    try step(done, deadline)
                    done += 1
                    if done & 1023 == 0 {
                        if KernelClock.monotonic() - began > timeLimit { break }
                        deadline = peer.now() + ahead
                    }
                }
            } catch { failure.value = error }
            result.value = (done, KernelClock.monotonic() - began, cbench_thread_cpu_ns() - threadCPU)
        }
        if let error = failure.value { throw error }
        return result.value
    }
}
