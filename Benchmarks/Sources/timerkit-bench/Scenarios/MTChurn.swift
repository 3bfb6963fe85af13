import CBenchShims
import Foundation
import Synchronization

/// `threads` threads schedule a one-shot 10 s ahead and cancel it, as fast as they can, on one
/// shared peer (one clock, one event loop, one queue): how a server's timeouts, scheduled from every
/// thread it has, scale across cores.
///
/// Every thread starts at the same instant and stops at the same instant, `duration` later; each
/// reads the peer's clock once per 1,024 pairs. Figures: the aggregate pairs per second; the
/// process's CPU time per pair (all threads, clean-up included); and the slowest thread's pairs
/// per second (a lock that is unfair to some threads shows there). NIO is driven from off its
/// event loop, as a server's other threads would. Each thread's closures capture state of their own.
enum MTChurn {
    static let ahead = 10 * NS.second

    static func run<P: Peer>(_ peer: P, threads: Int, duration: Int64) throws -> Figures {
        let ready = Atomic<Int>(0)
        let go = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)
        let counts = Mutex<[Int]>(Array(repeating: 0, count: threads))
        let failure = Mutex<String?>(nil)
        let finished = DispatchGroup()
        for index in 0..<threads {
            finished.enter()
            let thread = Thread {
                defer { finished.leave() }
                // Each thread's closures capture a log of its own, made on that thread (so not next
                // to another thread's in memory), as a server's capture per-request state: one
                // shared object's reference count would bounce between cores for every peer.
                let log = FireLog(capacity: 1)  // nothing fires during the run
                ready.add(1, ordering: .sequentiallyConsistent)
                while !go.load(ordering: .acquiring) {}
                var done = 0
                var deadline = peer.now() + ahead
                do {
                    while true {
                        peer.cancel(try peer.schedule(at: deadline, id: 0, log: log))
                        done += 1
                        if done & 1023 == 0 {
                            if stop.load(ordering: .relaxed) { break }
                            deadline = peer.now() + ahead
                        }
                    }
                } catch {
                    failure.withLock { $0 = String(describing: error) }
                }
                counts.withLock { $0[index] = done }
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        while ready.load(ordering: .sequentiallyConsistent) < threads { blockThread(for: NS.millisecond) }
        let cpuBefore = cbench_process_cpu_ns()
        let began = KernelClock.monotonic()
        go.store(true, ordering: .releasing)
        blockThread(for: duration)
        stop.store(true, ordering: .relaxed)
        finished.wait()
        let wall = KernelClock.monotonic() - began
        // Let work that cancelling left to other threads finish before reading the CPU time.
        blockThread(for: 200 * NS.millisecond)
        let cpu = cbench_process_cpu_ns() - cpuBefore
        if let failure = failure.withLock({ $0 }) { throw BenchError.failed(failure) }
        let perThread = counts.withLock { $0 }
        let total = perThread.reduce(0, +)
        let seconds = Double(wall) / 1e9
        return [
            ("threads", .int(Int64(threads))),
            ("pairs_per_s", .double(Double(total) / seconds)),
            ("cpu_ns_per_pair", .double(Double(cpu) / Double(max(total, 1)))),
            ("slowest_thread_pairs_per_s", .double(Double(perThread.min() ?? 0) / seconds)),
            ("pairs", .int(Int64(total)))
        ]
    }
}
