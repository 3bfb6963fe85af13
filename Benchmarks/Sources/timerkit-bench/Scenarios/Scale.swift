import CBenchShims
import Dispatch

/// N one-shots due uniformly over 1–3 s after the start: the cost of scheduling them, the memory
/// they hold, how late they fire, and the CPU it all takes. With a tolerance (the parameter
/// `N@Tms`), each may fire up to T ms after its deadline, so that a peer can serve many with one
/// wake-up; `outside_window` counts the fires before their deadline or after deadline + T.
///
/// Timers are scheduled from the main thread in random deadline order. Memory is malloc's bytes in
/// use after scheduling, minus before, over N: `uordblks` + `hblkhd` summed over every malloc arena
/// (mallinfo2 reports the main arena only, and peers allocate on their own threads too, in arenas
/// of their own); `heap_main_arena_bytes_per_timer` is mallinfo2's own figure. The buffers the
/// benchmark itself needs are allocated before the first reading.
enum Scale {
    static func run<P: Peer>(_ peer: P, n: Int, tolerance: Int64, grace: Int64) throws -> Figures {
        var random = SplitMix64(seed: 0x5CA1E)
        let offsets = (0..<n).map { _ in NS.second + Int64.random(in: 0..<(2 * NS.second), using: &random) }
        let log = FireLog(capacity: n)
        var handles: [P.OneShot] = []
        handles.reserveCapacity(n)

        let heapBefore = cbench_heap_in_use()
        let mainArenaBefore = cbench_heap_main_arena()
        let cpuBefore = cbench_process_cpu_ns()
        let start = peer.now()
        for i in 0..<n {
            handles.append(try peer.schedule(at: start + offsets[i], tolerance: tolerance, id: i, log: log))
        }
        let scheduled = peer.now()
        let heapAfter = cbench_heap_in_use()
        let mainArenaAfter = cbench_heap_main_arena()

        let limit = DispatchTime.now() + .nanoseconds(Int(start + 3 * NS.second + grace - peer.now()))
        let complete = log.allFired.wait(timeout: limit) == .success
        let cpu = cbench_process_cpu_ns() - cpuBefore

        var lateness: [Double] = []
        lateness.reserveCapacity(n)
        var lastFire = Int64.min
        var outsideWindow = 0
        for i in 0..<n where log.times[i] >= 0 {
            let late = log.times[i] - (start + offsets[i])
            if late < 0 || late > tolerance { outsideWindow += 1 }
            lateness.append(Double(late) / 1_000)
            lastFire = max(lastFire, log.times[i])
        }
        let distribution = Distribution(lateness)
        var figures: Figures = [
            ("n", .int(Int64(n))),
            ("ns_per_op", .double(Double(scheduled - start) / Double(n))),
            ("heap_bytes_per_timer", .double((Double(heapAfter) - Double(heapBefore)) / Double(n))),
            ("lateness_p50_us", .double(distribution.median)),
            ("lateness_p99_us", .double(distribution.quantile(0.99))),
            ("lateness_max_us", .double(distribution.max)),
            ("last_fire_s", .double(lateness.isEmpty ? .nan : Double(lastFire - start) / 1e9)),
            ("cpu_ns_per_fire", .double(Double(cpu) / Double(n))),
            ("fired", .int(Int64(lateness.count))),
            ("heap_main_arena_bytes_per_timer", .double((Double(mainArenaAfter) - Double(mainArenaBefore)) / Double(n)))
        ]
        if tolerance > 0 {
            figures.append(("tolerance_ns", .int(tolerance)))
            figures.append(("outside_window", .int(Int64(outsideWindow))))
        }
        if !complete { figures.append(("incomplete", .int(1))) }
        withExtendedLifetime(handles) {}
        return figures
    }
}
