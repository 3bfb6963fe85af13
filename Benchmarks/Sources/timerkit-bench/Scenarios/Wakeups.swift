import CBenchShims

/// 10k repeating timers with periods of 0.9–1.1 s (random phases, so fires are evenly spread): how often does the process
/// wake up, with no tolerance and with a tolerance of 10 % of the period?
///
/// TimerKit counts its engine's wake-ups (`TimerClock.wakeUpCount`). For every peer the benchmark
/// also counts thread wake-ups: voluntary context switches of every thread but the main one (a
/// thread that wakes, runs and sleeps again switches once), which is the figure for peers that keep
/// no count of their own.
enum Wakeups {
    static let timers = 10_000

    static func run<P: Peer>(_ peer: P, toleranceFraction: Double, measure: Int64) throws -> Figures {
        var random = SplitMix64(seed: 0x3A4E)
        let counter = Counter()
        let start = peer.now()
        let monotonicStart = KernelClock.monotonic()
        var repeaters: [Repeater] = []
        repeaters.reserveCapacity(timers)
        for _ in 0..<timers {
            let period = 900 * NS.millisecond + Int64.random(in: 0..<(200 * NS.millisecond), using: &random)
            let first = start + 50 * NS.millisecond + Int64.random(in: 0..<period, using: &random)
            let tolerance = Int64(Double(period) * toleranceFraction)
            repeaters.append(try peer.repeating(first: first, interval: period, tolerance: tolerance, delivery: .standard) { _ in counter.increment() })
        }
        // With random phases the fires are spread evenly from the start: measure once every timer
        // is in (a slow set-up makes some first fires late and bunched; give them 100 ms).
        sleepUntilMonotonic(max(monotonicStart + 300 * NS.millisecond, KernelClock.monotonic() + 100 * NS.millisecond))
        let wakeUps0 = peer.wakeUpCount()
        let switches0 = cbench_voluntary_switches_other_threads()
        let fires0 = counter.count
        let t0 = KernelClock.monotonic()
        sleepUntilMonotonic(t0 + measure)
        let wakeUps1 = peer.wakeUpCount()
        let switches1 = cbench_voluntary_switches_other_threads()
        let fires1 = counter.count
        let seconds = Double(KernelClock.monotonic() - t0) / 1e9
        for repeater in repeaters { repeater.stop() }

        let threadWakeUps = Double(switches1 - switches0) / seconds
        let own = wakeUps0.flatMap { w0 in wakeUps1.map { Double($0 - w0) / seconds } }
        return [
            ("tolerance", .double(toleranceFraction)),
            ("wakeups_per_s", .double(own ?? threadWakeUps)),
            ("wakeups_source", .string(own == nil ? "thread-switches" : "wakeUpCount")),
            ("thread_wakeups_per_s", .double(threadWakeUps)),
            ("fires_per_s", .double(Double(fires1 - fires0) / seconds)),
            ("threads", .int(Int64(cbench_thread_count())))
        ]
    }
}
