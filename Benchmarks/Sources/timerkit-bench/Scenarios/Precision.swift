import Dispatch

/// One 10 ms repeating timer: how late is each run, and does the grid drift?
enum Precision {
    static let interval = 10 * NS.millisecond

    static func run<P: Peer>(_ peer: P, fires: Int) throws -> Figures {
        let log = TickLog(target: fires)
        let first = peer.now() + interval
        let timer = try peer.repeating(first: first, interval: interval, tolerance: 0, delivery: .standard) { log.record($0) }
        let limit = DispatchTime.now() + .nanoseconds(Int(interval) * fires * 2 + Int(NS.second))
        let complete = log.reachedTarget.wait(timeout: limit) == .success
        timer.stop()
        let ticks = Array(log.snapshot.prefix(fires))
        let analysis = GridAnalysis(ticks: ticks, first: first, interval: interval)
        var figures = analysis.figures()
        figures.append(("fires", .int(Int64(ticks.count))))
        if !complete { figures.append(("incomplete", .int(1))) }
        figures.append(("samples_us", .array(analysis.lateness.map { .double(Double($0) / 1_000) })))
        return figures
    }
}
