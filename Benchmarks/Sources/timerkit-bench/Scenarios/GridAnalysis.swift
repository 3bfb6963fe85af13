/// Turns a repeating timer's ticks into lateness and drift.
///
/// Each run is measured against the deadline it stands for: the one the peer reports (TimerKit's
/// `scheduledDeadline`, or the peer's own grid), or else the earliest grid deadline
/// (`first + k·interval`) not yet accounted for. A run that stands for several deadlines (a dispatch
/// timer's `data`, TimerKit's `deadlineCount`, or a Foundation timer that skipped the ones it
/// missed) is measured against the earliest of them, and accounts for all.
struct GridAnalysis {
    /// Lateness of each run, in nanoseconds.
    var lateness: [Int64] = []
    /// Drift of the last run, in nanoseconds: its scheduled deadline minus `first + k·interval`
    /// (k: the deadlines before it), or — when the peer does not say its deadlines — the run's
    /// actual time minus `first + k·interval`.
    var drift: Int64 = 0
    /// Whether `drift` compares scheduled deadlines ("scheduled") or actual run times ("actual").
    var driftBasis = "scheduled"
    /// How many deadlines the runs stand for.
    var deadlines = 0

    init(ticks: [Tick], first requestedFirst: Int64, interval: Int64) {
        guard let firstTick = ticks.first else { return }
        // A peer that reports its deadlines has its own origin (AsyncTimerSequence starts its grid
        // when iteration starts); the grid's origin is its first deadline.
        let first = firstTick.scheduled ?? requestedFirst
        var k: Int64 = 0  // index of the earliest deadline not accounted for
        for (index, tick) in ticks.enumerated() {
            let isLast = index == ticks.count - 1
            let ideal = first + k * interval
            if let scheduled = tick.scheduled {
                lateness.append(tick.now - scheduled)
                if isLast { drift = scheduled - ideal }
                // Deadlines the run stands for: the peer's count, else those up to its deadline.
                k = tick.count.map { k + Int64($0) } ?? ((scheduled - first) / interval + 1)
            } else {
                lateness.append(tick.now - ideal)
                if isLast {
                    drift = tick.now - ideal
                    driftBasis = "actual"
                }
                if let count = tick.count {
                    k += Int64(count)
                } else {
                    // Skips missed deadlines: the run stood for every deadline that had come.
                    k = max(k + 1, (tick.now - first) / interval + 1)
                }
            }
        }
        deadlines = Int(k)
    }

    /// Figures over the runs, in microseconds.
    func figures() -> Figures {
        let us = lateness.map { Double($0) / 1_000 }
        let distribution = Distribution(us)
        let tenth = max(us.count / 10, 1)
        let trend = median(Array(us.suffix(tenth))) - median(Array(us.prefix(tenth)))
        return [
            ("lateness_p50_us", .double(distribution.median)),
            ("lateness_p99_us", .double(distribution.quantile(0.99))),
            ("lateness_max_us", .double(distribution.max)),
            ("lateness_min_us", .double(distribution.min)),
            ("drift_us", .double(Double(drift) / 1_000)),
            ("drift_basis", .string(driftBasis)),
            ("drift_trend_us", .double(trend))
        ]
    }
}
