/// One run of the command under `every`, as the summary and `--json` report it.
struct RunRecord: Sendable {
    /// 1 for the first run.
    let number: Int
    /// The grid deadline the run stands for (the latest, when it stands for several), in
    /// nanoseconds on the timer's clock.
    let deadline: Int64
    /// When the command was started, on the same clock.
    let start: Int64
    /// How long it ran.
    let duration: Int64
    /// The shell's status: the exit code, or 128 + a signal's number.
    let status: Int32

    var lateness: Int64 { start - deadline }

    /// One JSON object: instants in seconds since 1970 (`wallOffset` turns clock nanoseconds into
    /// them), durations in milliseconds.
    func json(wallOffset: Int64) -> String {
        func seconds(_ nanoseconds: Int64) -> String { Self.decimal(nanoseconds + wallOffset, scale: 9, digits: 6) }
        return "{\"run\":\(number),\"deadline\":\(seconds(deadline)),\"start\":\(seconds(start)),"
            + "\"lateness_ms\":\(Self.decimal(lateness, scale: 6, digits: 3)),\"exit_status\":\(status),"
            + "\"duration_ms\":\(Self.decimal(duration, scale: 6, digits: 3))}"
    }

    /// `value / 10^scale` with `digits` decimals, from integers (no floating-point rounding).
    static func decimal(_ value: Int64, scale: Int, digits: Int) -> String {
        var divisor: Int64 = 1
        for _ in 0..<scale { divisor *= 10 }
        var unit: Int64 = 1
        for _ in 0..<(scale - digits) { unit *= 10 }
        let rounded = (value >= 0 ? value + unit / 2 : value - unit / 2) / unit
        let digitsDivisor = divisor / unit
        let sign = rounded < 0 ? "-" : ""
        let magnitude = rounded.magnitude
        let whole = magnitude / UInt64(digitsDivisor)
        let fraction = String(magnitude % UInt64(digitsDivisor))
        return "\(sign)\(whole).\(String(repeating: "0", count: digits - fraction.count))\(fraction)"
    }
}

/// What `every` prints on stderr when it ends.
struct RunSummary {
    var runs: [RunRecord] = []
    /// Grid deadlines that got no run: skipped (skip), or folded into a later run (coalesce).
    var skipped = 0
    var coalesced = 0
    var elapsed: Int64 = 0
    /// The run under way when a signal ended the runs, which the signal was passed on to: not a
    /// failure of the command.
    var interrupted: Int?
    /// Runs stopped at `--timeout` (counted among the failures, status 124).
    var timedOut = 0

    var failures: Int { runs.filter { $0.status != 0 && $0.number != interrupted }.count }

    func text(policy: MissedChoice) -> String {
        let latenesses = runs.map(\.lateness).sorted()
        func quantile(_ p: Double) -> Int64 {
            guard !latenesses.isEmpty else { return 0 }
            let rank = Int((p * Double(latenesses.count)).rounded(.up)) - 1
            return latenesses[min(max(rank, 0), latenesses.count - 1)]
        }
        func ms(_ nanoseconds: Int64) -> String { RunRecord.decimal(nanoseconds, scale: 6, digits: 3) + " ms" }
        var parts = ["\(runs.count) run\(runs.count == 1 ? "" : "s") in \(RunRecord.decimal(elapsed, scale: 9, digits: 3)) s"]
        switch policy {
        case .skip: parts.append("\(skipped) deadline\(skipped == 1 ? "" : "s") skipped")
        case .coalesce: parts.append("\(coalesced) deadline\(coalesced == 1 ? "" : "s") coalesced")
        case .burst: break
        }
        if !runs.isEmpty {
            parts.append("start lateness p50 \(ms(quantile(0.5))), p99 \(ms(quantile(0.99))), max \(ms(latenesses.last ?? 0))")
        }
        parts.append("\(failures) failure\(failures == 1 ? "" : "s")" + (timedOut > 0 ? " (\(timedOut) timed out)" : ""))
        if let interrupted { parts.append("run \(interrupted) interrupted") }
        return "timerkit every: " + parts.joined(separator: "; ")
    }
}
