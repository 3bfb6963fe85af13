import Foundation

/// Markdown tables: one per scenario, peers as rows, ratio columns against TimerKit (peer ÷
/// timerkit: above 1 means TimerKit's figure is lower).
enum Report {
    static func markdown(_ results: [Result], scenarios: [Scenario], peers: [any Peer.Type], quick: Bool, wall: Double, load: String) -> String {
        var out = "# TimerKit benchmark (\(quick ? "quick" : "full") run, \(String(format: "%.0f", wall)) s)\n\n\(load)\n"
        let peerNames = peers.map { $0.name }
        func lookup(_ scenario: Scenario, _ peer: String, _ parameter: String = "") -> Result? {
            results.first { $0.scenario == scenario && $0.peer == peer && $0.parameter == parameter }
        }

        if scenarios.contains(.precision) {
            out += "\n## precision — one 10 ms repeating timer, \(Scenario.precisionFires(quick: quick)) fires (µs)\n\n"
            out +=
                "| peer | p50 | p99 (min–max) | max | drift | fires | CPU µs/fire | p50 ×tk | p99 ×tk | floor p99 ÷ p99 |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
            let base = lookup(.precision, "timerkit")
            let floor = lookup(.precision, "os-floor")
            for peer in peerNames {
                guard let result = lookup(.precision, peer) else { continue }
                let belowFloor = perRunRatio(result, over: floor, "lateness_p99_us").map { String(format: "%.2f", $0) } ?? ""
                out +=
                    "| \(peer) | " + cells(result, ["lateness_p50_us"], digits: 0) + " | " + cellWithSpread(result, "lateness_p99_us")
                    + " | " + cells(result, ["lateness_max_us"], digits: 0)
                    + " | " + driftCell(result) + " | " + cells(result, ["fires"], digits: 0) + " | " + cells(result, ["cpu_us_per_fire"], digits: 1)
                    + " | " + ratio(result, base, "lateness_p50_us") + " | " + ratio(result, base, "lateness_p99_us") + " | " + belowFloor + " |\n"
            }
            out +=
                "\nDrift: the last fire's scheduled deadline minus first + k·interval; \"(actual)\": the peer does not say its deadlines, so its last fire's actual time is used (this includes that fire's lateness). CPU: the process's CPU time over the run per fire (each peer runs in a process of its own). floor p99 ÷ p99: os-floor's p99 over the peer's, per run (the runs are interleaved), the median; above 1 means below the floor.\n"
        }

        if scenarios.contains(.churn) {
            let pendings = Scenario.churn.parameters(quick: quick)
            out +=
                "\n## churn — schedule a one-shot 10 s ahead and cancel it, \(Scenario.churnOperations(quick: quick) / 1000)k times (ns per schedule+cancel)\n\n"
            out += "| peer | " + pendings.map { "pending \(count($0)) | ×tk | thread CPU | process CPU" }.joined(separator: " | ") + " |\n"
            out += "|---|" + pendings.map { _ in "--:|--:|--:|--:" }.joined(separator: "|") + "|\n"
            for peer in peerNames {
                var row = "| \(peer) |"
                for pending in pendings {
                    guard let result = lookup(.churn, peer, pending) else {
                        row += " | | | |"
                        continue
                    }
                    row +=
                        " " + cells(result, ["ns_per_op"], digits: 0) + " | " + ratio(result, lookup(.churn, "timerkit", pending), "ns_per_op")
                        + " | " + cells(result, ["thread_cpu_ns_per_op", "cpu_ns_per_op"], digits: 0) + " |"
                }
                out += row + "\n"
            }
            out +=
                "\nWall time per operation, and CPU time per operation: of the scheduling thread alone, and of the whole process (all threads, including clean-up deferred to other threads, within 200 ms). A peer slower than the time limit did fewer operations (`ops` in the JSON).\n"
        }

        if scenarios.contains(.scale) {
            out += "\n## scale — N one-shots due over 1–3 s\n\n"
            out += "| peer | N | ns/schedule | heap B/timer | p50 µs | p99 µs | max µs | last fire s | CPU ns/fire | ns ×tk | heap ×tk | CPU ×tk |\n"
            out += "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
            for n in Scenario.scale.parameters(quick: quick) {
                let base = lookup(.scale, "timerkit", n)
                for peer in peerNames {
                    guard let result = lookup(.scale, peer, n) else { continue }
                    out +=
                        "| \(peer) | \(count(n)) | "
                        + cells(result, ["ns_per_op", "heap_bytes_per_timer", "lateness_p50_us", "lateness_p99_us", "lateness_max_us"], digits: 0)
                        + " | " + cells(result, ["last_fire_s"], digits: 2) + " | " + cells(result, ["cpu_ns_per_fire"], digits: 0)
                        + " | " + ratio(result, base, "ns_per_op") + " | " + ratio(result, base, "heap_bytes_per_timer") + " | "
                        + ratio(result, base, "cpu_ns_per_fire") + " |\n"
                }
            }
            for n in Scenario.scale.parameters(quick: quick) where Scenario.scaleTolerance(n) > 0 {
                let outside = peerNames.compactMap { peer -> String? in
                    guard let result = lookup(.scale, peer, n), result.status != .notApplicable else { return nil }
                    return "\(peer) " + cells(result, ["outside_window"], digits: 0)
                }
                if !outside.isEmpty {
                    out +=
                        "\nFires outside their window (before the deadline or after deadline + tolerance), \(count(n)): " + outside.joined(separator: ", ")
                        + ".\n"
                }
            }
            out +=
                "\nHeap: malloc bytes in use (uordblks + hblkhd, summed over every malloc arena via malloc_info) after scheduling minus before, over N. CPU: process user+system time from the start to the last fire, over N. An incomplete run (not every timer fired before the limit) is marked \"(incomplete)\".\n"
        }

        if scenarios.contains(.busyOther) || scenarios.contains(.busySame) {
            let seconds = Scenario.busyDuration(quick: quick) / NS.second
            out += "\n## busy — a 100 ms repeating timer for \(seconds) s while a context is blocked 300 ms every 500 ms\n\n"
            out += "| peer | busy-other fires | busy-other max lateness ms | busy-same fires | busy-same max lateness ms |\n|---|--:|--:|--:|--:|\n"
            for peer in peerNames {
                var row = "| \(peer) |"
                for scenario in [Scenario.busyOther, .busySame] {
                    guard scenarios.contains(scenario), let result = lookup(scenario, peer) else {
                        row += " | |"
                        continue
                    }
                    if result.status != .ok {
                        row += " \(result.status.rawValue) | \(result.status.rawValue) |"
                    } else {
                        row += " " + cells(result, ["fires"], digits: 0) + " | " + format((result.number("lateness_max_us") ?? .nan) / 1000, digits: 1) + " |"
                    }
                }
                out += row + "\n"
            }
            out +=
                "\n\(seconds * 10) deadlines come in \(seconds) s. busy-other: the timer on the peer's standard delivery, the blocked context elsewhere; busy-same: the timer delivered to the blocked context. Fewer fires = missed deadlines coalesced or skipped; lateness is against the earliest deadline a fire stands for.\n"
        }

        if scenarios.contains(.wakeups) {
            out += "\n## wakeups — 10k repeating timers, periods 0.9–1.1 s (wake-ups per second)\n\n"
            out +=
                "| peer | tolerance 0 | tolerance 10 % | ×tk (0) | ×tk (10 %) | thread wake-ups/s (0) | thread wake-ups/s (10 %) | fires/s (0) | source |\n|---|--:|--:|--:|--:|--:|--:|--:|---|\n"
            for peer in peerNames {
                let zero = lookup(.wakeups, peer, "0")
                let tenth = lookup(.wakeups, peer, "0.1")
                guard let zero, let tenth else { continue }
                out +=
                    "| \(peer) | " + cells(zero, ["wakeups_per_s"], digits: 0) + " | " + cells(tenth, ["wakeups_per_s"], digits: 0)
                    + " | " + ratio(zero, lookup(.wakeups, "timerkit", "0"), "wakeups_per_s") + " | "
                    + ratio(tenth, lookup(.wakeups, "timerkit", "0.1"), "wakeups_per_s")
                    + " | " + cells(zero, ["thread_wakeups_per_s"], digits: 0) + " | " + cells(tenth, ["thread_wakeups_per_s"], digits: 0)
                    + " | " + cells(zero, ["fires_per_s"], digits: 0) + " | " + (zero.figures["wakeups_source"]?.text ?? "") + " |\n"
            }
            out +=
                "\nTimerKit's figure is its engine's own count (`TimerClock.wakeUpCount`); the others' is thread wake-ups: voluntary context switches of every thread but the main one per second (TimerKit's is shown too, for comparison).\n"
        }

        if scenarios.contains(.reset) {
            let resets = Scenario.resetCount(quick: quick)
            out +=
                "\n## reset — 100k idle timeouts due over 10–60 s; \(resets >= 1_000_000 ? "\(resets / 1_000_000)M" : "\(resets / 1000)k") times, one at random is pushed to 30 s from now\n\n"
            out +=
                "| peer | how | ns/reset (min–max) | ×tk | thread CPU ns | process CPU ns | heap B/key | heap growth B/key |\n|---|---|--:|--:|--:|--:|--:|--:|\n"
            for parameter in Scenario.reset.parameters(quick: quick) {
                let base = lookup(.reset, "timerkit", parameter)
                for peer in peers {
                    guard let result = lookup(.reset, peer.name, parameter), result.status != .notApplicable else { continue }
                    out +=
                        "| \(peer.name) | \(peer.resetMethod) | " + cellWithSpread(result, "ns_per_op") + " | " + ratio(result, base, "ns_per_op")
                        + " | " + cells(result, ["thread_cpu_ns_per_op", "cpu_ns_per_op", "heap_bytes_per_key", "heap_growth_bytes_per_key"], digits: 0)
                        + " |\n"
                }
            }
            out +=
                "\nns/reset: wall time on the peer's scheduling thread, the median of the runs with their range. Heap: malloc bytes in use per pending key after setup; growth: what the resets added (timers cancelled and replaced that the peer frees only later). A peer that could not do every reset within the time limit did fewer (`ops` in the JSON).\n"
        }

        if scenarios.contains(.frames) {
            let seconds = Scenario.frameDuration(quick: quick) / NS.second
            out += "\n## frames — a 60 Hz frame clock for \(seconds) s (µs)\n\n"
            out +=
                "| peer | jitter p50 (min–max) | jitter p99 (min–max) | jitter max | lateness p50 | lateness p99 | dropped | bursts | frames | p99 ×tk |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
            let base = lookup(.frames, "timerkit")
            for peer in peerNames {
                guard let result = lookup(.frames, peer), result.status != .notApplicable else { continue }
                out +=
                    "| \(peer) | " + cellWithSpread(result, "jitter_p50_us") + " | " + cellWithSpread(result, "jitter_p99_us")
                    + " | " + cells(result, ["jitter_max_us", "lateness_p50_us", "lateness_p99_us", "dropped_frames", "burst_frames", "frames"], digits: 0)
                    + " | " + ratio(result, base, "jitter_p99_us") + " |\n"
            }
            out +=
                "\nJitter: |interval − 16 666 667 ns| between consecutive handler runs. timerkit is `FrameClock`; os-floor is a thread looping `clock_nanosleep` on absolute deadlines with 1 ns timer slack; the others run a repeating timer on the frame grid. Dropped: grid frames a tick stood for without one of its own; bursts: ticks less than half a frame after the previous one.\n"
        }

        if scenarios.contains(.mtchurn) {
            out += mtchurnSection(results, peers: peerNames, quick: quick)
        }

        let notApplicable = Set(results.filter { $0.status == .notApplicable }.map(\.peer))
        let limitations = peers.filter { notApplicable.contains($0.name) }.map { $0.limitations }.filter { !$0.isEmpty }
        if !limitations.isEmpty {
            out += "\n### n/a\n\n" + limitations.map { "- \($0)" }.joined(separator: "\n") + "\n"
        }
        let failures = results.filter { $0.status == .failed || !$0.note.isEmpty }
        if !failures.isEmpty {
            out += "\n### failures\n\n" + failures.map { "- \($0.scenario.rawValue) \($0.peer) \($0.parameter): \($0.note)" }.joined(separator: "\n") + "\n"
        }
        return out
    }

    /// A result's figures, or its status when it has none.
    static func cells(_ result: Result, _ keys: [String], digits: Int) -> String {
        keys.map { key in
            guard result.status == .ok else { return result.status.rawValue }
            var text = format(result.number(key) ?? .nan, digits: digits)
            if key == keys.first, result.number("incomplete") ?? 0 > 0 { text += " (incomplete)" }
            if key == keys.first, result.timeouts > 0 { text += " (\(result.timeouts) timeout)" }
            return text
        }.joined(separator: " | ")
    }

    /// A figure's median with its range over the runs: `131 (126–140)`.
    static func cellWithSpread(_ result: Result, _ key: String) -> String {
        let median = cells(result, [key], digits: 0)
        guard result.status == .ok, result.okRuns > 1, let range = result.spread[key] else { return median }
        return "\(median) (\(format(range.min, digits: 0))–\(format(range.max, digits: 0)))"
    }

    static func driftCell(_ result: Result) -> String {
        guard result.status == .ok else { return result.status.rawValue }
        let text = format(result.number("drift_us") ?? .nan, digits: 0)
        return result.figures["drift_basis"]?.text == "actual" ? "\(text) (actual)" : text
    }

    static func ratio(_ result: Result, _ base: Result?, _ key: String) -> String {
        guard result.status == .ok, let base, base.status == .ok, let value = result.number(key), let reference = base.number(key), reference > 0 else {
            return ""
        }
        return String(format: "%.2f", value / reference)
    }

    static func format(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return "–" }
        return String(format: "%.\(digits)f", value)
    }

    static func count(_ parameter: String) -> String {
        if let at = parameter.firstIndex(of: "@") {
            return "\(count(String(parameter[..<at]))), tolerance \(parameter[parameter.index(after: at)...])"
        }
        guard let value = Int(parameter) else { return parameter }
        if value >= 1_000_000 { return "\(value / 1_000_000)M" }
        if value >= 1_000 { return "\(value / 1_000)k" }
        return "\(value)"
    }

    /// The median over runs of a per-run ratio `base ÷ result` (pairing run k of each: the runs
    /// are interleaved), so a noisy spell that slowed run k of every peer cancels out.
    static func perRunRatio(_ result: Result, over base: Result?, _ key: String) -> Double? {
        guard result.status == .ok, let base, base.status == .ok else { return nil }
        let ratios = zip(base.perRun, result.perRun).compactMap { pair -> Double? in
            guard let reference = pair.0[key]?.number, let value = pair.1[key]?.number, value > 0 else { return nil }
            return reference / value
        }
        return ratios.isEmpty ? nil : median(ratios)
    }

    static func mtchurnSection(_ results: [Result], peers: [String], quick: Bool) -> String {
        let threadCounts = Scenario.mtchurn.parameters(quick: quick)
        func lookup(_ peer: String, _ threads: String) -> Result? {
            results.first { $0.scenario == .mtchurn && $0.peer == peer && $0.parameter == threads && $0.status != .notApplicable }
        }
        let seconds = Double(Scenario.mtchurnDuration(quick: quick)) / 1e9
        var out = "\n## mtchurn — T threads schedule a one-shot 10 s ahead and cancel it on one shared clock, \(String(format: "%.0f", seconds)) s\n\n"
        out +=
            "| peer | T | M pairs/s (min–max) | tk ÷ peer, per run | CPU ns/pair (min–max) | slowest thread M pairs/s | ×T=1 |\n|---|--:|--:|--:|--:|--:|--:|\n"
        for peer in peers {
            for threads in threadCounts {
                guard let result = lookup(peer, threads) else { continue }
                guard result.status == .ok else {
                    out += "| \(peer) | \(threads) | \(result.status.rawValue) | | | | |\n"
                    continue
                }
                func millions(_ key: String) -> String {
                    let median = format((result.number(key) ?? .nan) / 1e6, digits: 2)
                    guard result.okRuns > 1, let range = result.spread[key] else { return median }
                    return "\(median) (\(format(range.min / 1e6, digits: 2))–\(format(range.max / 1e6, digits: 2)))"
                }
                let ratio = perRunRatio(result, over: lookup("timerkit", threads), "pairs_per_s").map { String(format: "%.2f", $0) } ?? ""
                let single = lookup(peer, "1").flatMap { one in one.number("pairs_per_s").flatMap { base in result.number("pairs_per_s").map { $0 / base } } }
                out +=
                    "| \(peer) | \(threads) | \(millions("pairs_per_s")) | \(ratio) | \(cellWithSpread(result, "cpu_ns_per_pair")) | "
                    + format((result.number("slowest_thread_pairs_per_s") ?? .nan) / 1e6, digits: 2) + " | " + (single.map { String(format: "%.2f", $0) } ?? "")
                    + " |\n"
            }
        }
        out +=
            "\nAll threads start and stop together; pairs/s is the aggregate. tk ÷ peer: TimerKit's pairs/s over the peer's, computed for each run (run k of every peer ran close in time) and the median given; above 1, TimerKit did more. CPU: the whole process's user+system time per pair. ×T=1: the aggregate over the same peer's with one thread. NIO is driven from off its event loop.\n"
        return out
    }
}
