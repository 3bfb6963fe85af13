import CBenchShims
import Dispatch

/// One 10 ms repeating timer: how late is each run, and does the grid drift?
enum Precision {
    static let interval = 10 * NS.millisecond

    static func run<P: Peer>(_ peer: P, fires: Int) throws -> Figures {
        let log = TickLog(target: fires)
        let first = peer.now() + interval
        let cpuBefore = cbench_process_cpu_ns()
        let timer = try peer.repeating(first: first, interval: interval, tolerance: 0, delivery: .standard) { log.record($0) }
        let limit = DispatchTime.now() + .nanoseconds(Int(interval) * fires * 2 + Int(NS.second))
        let complete = log.reachedTarget.wait(timeout: limit) == .success
        timer.stop()
        let cpu = cbench_process_cpu_ns() - cpuBefore
        let ticks = Array(log.snapshot.prefix(fires))
        let analysis = GridAnalysis(ticks: ticks, first: first, interval: interval)
        var figures = analysis.figures()
        figures.append(("fires", .int(Int64(ticks.count))))
        // The process's CPU time over the run per fire: what waiting for and delivering each fire
        // costs (each peer runs in a process of its own).
        figures.append(("cpu_us_per_fire", .double(Double(cpu) / 1_000 / Double(max(ticks.count, 1)))))
        if !complete { figures.append(("incomplete", .int(1))) }
        figures.append(("samples_us", .array(analysis.lateness.map { .double(Double($0) / 1_000) })))
        return figures
    }
}
