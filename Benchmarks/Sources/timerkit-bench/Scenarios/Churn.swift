import CBenchShims
import Dispatch

/// Schedule a one-shot 10 s ahead and cancel it, over and over, while other timers are pending:
/// the cost of a timeout that never fires, the commonest timer of all.
///
/// The pending timers are due uniformly over 5–15 s after setup (so the churned ones land among
/// them) and are scheduled in deadline order. The loop runs on the peer's scheduling thread and
/// stops early after `timeLimit`, before any pending timer can fire. It reads the peer's clock once
/// per 1,024 operations, not per operation: a clock read (about 25 ns here) is not part of what is
/// measured, and the deadlines stay 10 s ahead to within a fraction of a millisecond. `ns_per_op` is wall time;
/// `thread_cpu_ns_per_op` is the CPU time of the scheduling thread alone (immune to the thread
/// being preempted on a busy machine); `cpu_ns_per_op` is the whole process's, clean-up included.
enum Churn {
    static let ahead = 10 * NS.second

    static func run<P: Peer>(_ peer: P, operations: Int, pending: Int, timeLimit: Int64) throws -> Figures {
        let log = FireLog(capacity: 1)  // nothing fires during the run
        var random = SplitMix64(seed: 0xC4A2)
        let start = peer.now()
        let deadlines = (0..<pending).map { _ in start + 5 * NS.second + Int64.random(in: 0..<(10 * NS.second), using: &random) }.sorted()
        let kept = Box<[P.OneShot]>([])
        kept.value.reserveCapacity(pending)
        let failure = Box<(any Error)?>(nil)
        peer.onSchedulingThread {
            do {
                for deadline in deadlines { kept.value.append(try peer.schedule(at: deadline, id: 0, log: log)) }
            } catch { failure.value = error }
        }
        if let error = failure.value { throw error }

        let cpuBefore = cbench_process_cpu_ns()
        let result = try TimedLoop.run(peer, operations: operations, timeLimit: timeLimit, ahead: ahead) { _, deadline in
            peer.cancel(try peer.schedule(at: deadline, id: 0, log: log))
        }
        // Let work that cancelling left to other threads finish before reading the CPU time.
        blockThread(for: 200 * NS.millisecond)
        let cpu = cbench_process_cpu_ns() - cpuBefore
        let ops = max(result.ops, 1)
        return [
            ("pending", .int(Int64(pending))),
            ("ns_per_op", .double(Double(result.wall) / Double(ops))),
            ("cpu_ns_per_op", .double(Double(cpu) / Double(ops))),
            ("thread_cpu_ns_per_op", .double(Double(result.threadCPU) / Double(ops))),
            ("ops", .int(Int64(result.ops)))
        ]
    }
}
