import Dispatch

/// A 60 Hz frame clock for a while: how even are the intervals between frames (jitter), how late
/// is each frame, and how many frames were dropped or delivered in a burst?
///
/// Each peer ticks the way its users would drive frames (``Peer/frames(framesPerSecond:_:)``:
/// TimerKit's `FrameClock`, the others a repeating timer on the frame grid, the OS floor a
/// `clock_nanosleep` loop). Jitter is |interval − frame duration| between consecutive handler
/// runs. Dropped: grid frames the run stood for without a tick of their own (a peer that coalesces
/// or skips); a burst frame: one that came less than half a frame after the previous (a peer that
/// catches up).
enum Frames {
    static let framesPerSecond = 60

    static func run<P: Peer>(_ peer: P, duration: Int64) throws -> Figures {
        let interval = (NS.second + Int64(framesPerSecond / 2)) / Int64(framesPerSecond)
        let target = Int(duration / interval)
        let log = TickLog(target: target)
        let requestedFirst = peer.now() + interval
        let clock = try peer.frames(framesPerSecond: framesPerSecond) { log.record($0) }
        let limit = DispatchTime.now() + .nanoseconds(Int(duration + 2 * NS.second))
        let complete = log.reachedTarget.wait(timeout: limit) == .success
        clock.stop()
        let ticks = Array(log.snapshot.prefix(target))

        let grid = GridAnalysis(ticks: ticks, first: requestedFirst, interval: interval)
        var jitter: [Double] = []
        var bursts = 0
        for (previous, tick) in zip(ticks, ticks.dropFirst()) {
            let gap = tick.now - previous.now
            jitter.append(Double(abs(gap - interval)) / 1_000)
            if gap < interval / 2 { bursts += 1 }
        }
        let distribution = Distribution(jitter)
        let lateness = Distribution(grid.lateness.map { Double($0) / 1_000 })
        var figures: Figures = [
            ("jitter_p50_us", .double(distribution.median)),
            ("jitter_p99_us", .double(distribution.quantile(0.99))),
            ("jitter_max_us", .double(distribution.max)),
            ("lateness_p50_us", .double(lateness.median)),
            ("lateness_p99_us", .double(lateness.quantile(0.99))),
            ("dropped_frames", .int(Int64(max(0, grid.deadlines - ticks.count)))),
            ("burst_frames", .int(Int64(bursts))),
            ("frames", .int(Int64(ticks.count)))
        ]
        if !complete { figures.append(("incomplete", .int(1))) }
        return figures
    }
}
