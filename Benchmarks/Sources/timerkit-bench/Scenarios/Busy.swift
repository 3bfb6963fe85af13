import Foundation

/// A 100 ms repeating timer while a serial context is blocked for 300 ms every 500 ms (from 50 ms
/// on). busy-other: the timer is delivered elsewhere (the peer's standard delivery) — it should not
/// notice. busy-same: it is delivered to the blocked context — its fires wait, and the peer's
/// policy for missed deadlines shows (coalesce, skip or burst).
///
/// The blockers are the peer's own one-shot work on its blockable context; a peer with none
/// (busy-other only) gets a plain thread that blocks.
enum Busy {
    static let interval = 100 * NS.millisecond
    static let blockEvery = 500 * NS.millisecond
    static let blockFor = 300 * NS.millisecond
    static let blockFrom = 50 * NS.millisecond

    static func run<P: Peer>(_ peer: P, same: Bool, duration: Int64) throws -> Figures {
        let log = TickLog(target: .max)
        let start = peer.now()
        let monotonicStart = KernelClock.monotonic()
        let blockStarts = stride(from: blockFrom, to: duration, by: Int(blockEvery)).map { $0 }

        if P.capabilities.contains(.blockable) {
            for offset in blockStarts {
                try peer.perform(at: start + offset, on: .blockable) { blockThread(for: blockFor) }
            }
        } else {
            let thread = Thread {
                for offset in blockStarts {
                    sleepUntilMonotonic(monotonicStart + offset)
                    blockThread(for: blockFor)
                }
            }
            thread.start()
        }
        let first = start + interval
        let timer = try peer.repeating(first: first, interval: interval, tolerance: 0, delivery: same ? .blockable : .standard) { log.record($0) }
        // Runs for deadlines up to `duration` are counted if they come within 50 ms of it.
        let end = start + duration + 50 * NS.millisecond
        sleepUntilMonotonic(monotonicStart + duration + 50 * NS.millisecond)
        timer.stop()
        let ticks = log.snapshot.filter { $0.now <= end }
        let analysis = GridAnalysis(ticks: ticks, first: first, interval: interval)
        let distribution = Distribution(analysis.lateness.map { Double($0) / 1_000 })
        return [
            ("fires", .int(Int64(ticks.count))),
            ("expected_fires", .int(duration / interval)),
            ("lateness_max_us", .double(distribution.max)),
            ("lateness_p50_us", .double(distribution.median))
        ]
    }
}
