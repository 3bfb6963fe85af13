import CBenchShims
import Dispatch

/// A server's idle timeouts: `pending` one-shots due over 10–60 s, and, over and over, one of them
/// picked at random has its deadline pushed to 30 s from now ("this connection just sent a
/// request"). Nothing fires during the run.
///
/// Each peer resets the way its users would: in place where it can (``Peer/reset(_:to:id:log:)``:
/// TimerKit's `ScheduledTimer.reschedule` and its registry's by key, a dispatch source's
/// `schedule`, a Foundation timer's `fireDate`), else by cancelling and scheduling anew. Setup and
/// the resets run on the peer's scheduling thread; the loop stops early after `timeLimit`, well
/// before the first deadline. The clock is read once per 1,024 resets, as in churn. Memory is the
/// heap in use per pending key after setup (as in scale), and its growth per key over the resets
/// (what cancelled-and-replaced timers leave behind until their deadline would have come).
enum Reset {
    static let pushAhead = 30 * NS.second

    static func run<P: Peer>(_ peer: P, pending: Int, resets: Int, timeLimit: Int64) throws -> Figures {
        let log = FireLog(capacity: pending)
        var random = SplitMix64(seed: 0x2E5E7)
        let start = peer.now()
        let deadlines = (0..<pending).map { _ in start + 10 * NS.second + Int64.random(in: 0..<(50 * NS.second), using: &random) }
        let picks = (0..<resets).map { _ in Int.random(in: 0..<max(pending, 1), using: &random) }
        let handles = Box<[P.OneShot]>([])
        handles.value.reserveCapacity(pending)
        let failure = Box<(any Error)?>(nil)

        let heapBefore = cbench_heap_in_use()
        peer.onSchedulingThread {
            do {
                for (id, deadline) in deadlines.enumerated() { handles.value.append(try peer.schedule(at: deadline, id: id, log: log)) }
            } catch { failure.value = error }
        }
        if let error = failure.value { throw error }
        let heapPending = cbench_heap_in_use()

        let cpuBefore = cbench_process_cpu_ns()
        let result = try TimedLoop.run(peer, operations: resets, timeLimit: timeLimit, ahead: pushAhead) { done, deadline in
            let id = picks[done]
            handles.value[id] = try peer.reset(handles.value[id], to: deadline, id: id, log: log)
        }
        blockThread(for: 200 * NS.millisecond)
        let cpu = cbench_process_cpu_ns() - cpuBefore
        let heapAfter = cbench_heap_in_use()
        // Alive until here, so that their release does not count as the peer's memory.
        withExtendedLifetime((deadlines, picks, handles)) {}
        let ops = max(result.ops, 1)
        let keys = Double(max(pending, 1))
        let fired = log.count
        var figures: Figures = [
            ("pending", .int(Int64(pending))),
            ("ns_per_op", .double(Double(result.wall) / Double(ops))),
            ("thread_cpu_ns_per_op", .double(Double(result.threadCPU) / Double(ops))),
            ("cpu_ns_per_op", .double(Double(cpu) / Double(ops))),
            ("heap_bytes_per_key", .double((Double(heapPending) - Double(heapBefore)) / keys)),
            ("heap_growth_bytes_per_key", .double((Double(heapAfter) - Double(heapPending)) / keys)),
            ("ops", .int(Int64(result.ops)))
        ]
        // A deadline is 10 s away at the earliest; a fire means the peer lost a reset.
        if fired > 0 { figures.append(("fired_early", .int(Int64(fired)))) }
        return figures
    }
}
