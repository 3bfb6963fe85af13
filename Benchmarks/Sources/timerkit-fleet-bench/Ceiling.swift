// The ceiling of a fleet, and what happens above it, beside pgqueuer in the same rounds.
//
//   Scripts/with-postgres .build-bench-release/release/timerkit-fleet-bench ceiling
//
// Ceiling: each configuration (system, instance count) is offered rising rates, a run of its own
// each (Fleet.swift); the ceiling is the highest rate before the first at which it does not keep up
// — every timer fired once, and 99 % of them within the bound (50 ms) of their due time. Reported:
// each round's ceiling, their median, and the ratios the targets name.
//
// Overload: one instance of each system is offered 1.5× its median ceiling for 20 s, then 0.5× it
// for 20 s. Reported: the fire rate during the overload, the rate the backlog drains at afterwards
// (fires a second from the end of the overload until every timer due by then has fired), and a
// second-by-second series — offered, fired, lag p99 — as a table and an SVG.
import ArgumentParser
import Foundation

struct Ceiling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The highest offered rate each system keeps up with, then 1.5× it for 20 s and the drain after, beside pgqueuer.")

    @OptionGroup var fleet: FleetSettings
    @Option(help: "Rounds; each runs every configuration once, interleaved.") var rounds = 3
    @Option(help: "The offered rates tried, timers a second, in rising order.") var steps: [Int] = [500, 1_000, 2_000, 3_000, 4_000, 6_000, 8_000]
    @Option(help: "Seconds each step is offered for.") var seconds = 8.0
    @Option(help: "The lag p99 a step must stay within, in milliseconds.") var bound = 50.0
    @Option(help: "Instance counts.") var instances: [Int] = [1, 2]
    @Option(help: "Systems: timerkit, pgqueuer (its defaults), pgqueuer-tuned.") var systems: [String] = ["timerkit", "pgqueuer"]
    @Option(help: "Seconds of the overload (1.5× the ceiling), and of the lighter load after it (0.5×); 0 skips the overload.")
    var overloadSeconds = 20.0
    @Option(help: "Where to write the overload's SVG plot (one panel per system).") var plot: String?

    func run() async throws {
        say(
            "timerkit-fleet-bench ceiling: \(rounds) rounds; steps \(steps.map(String.init).joined(separator: ", "))/s for \(String(format: "%g", seconds)) s "
                + "(\(fleet.describedLoad)); kept up = every timer fired once, lag p99 ≤ \(String(format: "%g", bound)) ms; instances "
                + "\(instances.map(String.init).joined(separator: ", ")); \(fleet.describedOptions); pgqueuer on its defaults; load at start \(loadAverage())")
        var ceilings: [String: [Int]] = [:]
        var order: [String] = []
        var overloads: [String: [Overload]] = [:]
        try await fleet.withFleet(systems: systems) { fleet in
            for round in 1...rounds {
                for system in systems {
                    for count in instances {
                        let name = "\(system) | \(count)"
                        if !order.contains(name) { order.append(name) }
                        var ceiling = 0
                        for rate in steps {
                            let sample = try await fleet.measure(.offered([Phase(rate: rate, seconds: seconds)]), system: system, instances: count)
                            let kept = sample.keptUp(within: bound)
                            say(
                                "  round \(round) \(name) | offered \(rate)/s: \(sample.summary) — \(kept ? "kept up" : "did not keep up"); load \(loadAverage())"
                            )
                            guard kept else { break }
                            ceiling = rate
                        }
                        ceilings[name, default: []].append(ceiling)
                        say("  round \(round) \(name): ceiling \(ceiling)/s")
                    }
                }
            }
            guard overloadSeconds > 0 else { return }
            for round in 1...rounds {
                for system in systems {
                    let ceiling = median(ceilings["\(system) | 1"] ?? [])
                    guard ceiling > 0 else {
                        say("  overload | \(system) | 1: skipped (no step kept up)")
                        continue
                    }
                    let phases = [Phase(rate: ceiling * 3 / 2, seconds: overloadSeconds), Phase(rate: ceiling / 2, seconds: overloadSeconds)]
                    let sample = try await fleet.measure(.offered(phases), system: system, instances: 1)
                    let overload = Overload(sample: sample, phases: phases, ceiling: ceiling, bound: bound)
                    overloads[system, default: []].append(overload)
                    say(
                        "  round \(round) overload | \(system) | 1: \(Scenario.offered(phases).name): \(sample.summary); "
                            + String(
                                format: "fire rate during the overload %.0f/s (%.0f %% of the ceiling), %@; load %@",
                                overload.overloadRate, overload.overloadRate / Double(ceiling) * 100, overload.drainDescription, loadAverage()))
                }
            }
        }
        say("\n| system | instances | ceiling, median (min–max) | rounds |")
        say("|---|--:|--:|---|")
        for name in order {
            let values = ceilings[name] ?? []
            say("| \(name) | \(spreadCell(values.map(Double.init), "%.0f")) | \(values.map(String.init).joined(separator: ", ")) |")
        }
        let timerkit = median(ceilings["timerkit | 1"] ?? [])
        for system in systems where system != "timerkit" {
            let peer = median(ceilings["\(system) | 1"] ?? [])
            say(
                "TimerKit's ceiling ÷ \(system)'s, one instance: \(peer > 0 ? String(format: "%.2f×", Double(timerkit) / Double(peer)) : "– (\(system) kept up at no step)")"
            )
        }
        for system in systems where instances.contains(1) && instances.contains(2) {
            let one = median(ceilings["\(system) | 1"] ?? [])
            let two = median(ceilings["\(system) | 2"] ?? [])
            say("\(system): two instances' ceiling ÷ one's: \(one > 0 ? String(format: "%.2f×", Double(two) / Double(one)) : "–")")
        }
        guard !overloads.isEmpty else { return }
        say(
            "\n| overload (1 instance) | ceiling | offered | fire rate during the overload | % of the ceiling | drain rate after | lag p99 ms | fired | duplicates |"
        )
        say("|---|--:|---|--:|--:|--:|--:|--:|--:|")
        for system in systems {
            guard let runs = overloads[system], let first = runs.first else { continue }
            let drains = runs.filter { $0.backlogAtEnd > 0 }.compactMap(\.drainRate)
            let backlogs = runs.count { $0.backlogAtEnd > 0 }
            say(
                "| \(system) | \(first.ceiling)/s | \(Scenario.offered(first.phases).name) | \(spreadCell(runs.map(\.overloadRate), "%.0f"))/s | "
                    + "\(spreadCell(runs.map { $0.overloadRate / Double($0.ceiling) * 100 }, "%.0f")) | "
                    + "\(backlogs == 0 ? "no backlog formed" : drains.isEmpty ? "never cleared" : spreadCell(drains, "%.0f") + "/s")"
                    + "\(drains.count < backlogs ? " (\(backlogs - drains.count) never cleared)" : "") | "
                    + "\(spreadCell(runs.map(\.sample.lag.p99), "%.0f")) | \(runs.map { "\($0.sample.fired)/\($0.sample.expected)" }.joined(separator: ", ")) | "
                    + "\(runs.map { String($0.sample.duplicates) }.joined(separator: ", ")) |")
        }
        for system in systems {
            guard let run = overloads[system]?.last else { continue }
            say("\n\(system), the last overload second by second (seconds from the first due time):")
            say("| s | offered/s | fired/s | lag p99 ms |")
            say("|--:|--:|--:|--:|")
            for second in run.series { say(String(format: "| %d | %d | %d | %.0f |", second.second, second.offered, second.fired, second.lagP99)) }
        }
        if let plot {
            let svg = OverloadPlot.svg(systems.compactMap { system in overloads[system]?.last.map { (system, $0) } })
            try svg.write(toFile: plot, atomically: true, encoding: .utf8)
            say("\nplot: \(plot)")
        }
        say("\nload average at the end: \(loadAverage()) (2 cores)")
    }

    func median(_ values: [Int]) -> Int {
        values.isEmpty ? 0 : values.sorted()[values.count / 2]
    }
}

/// One overload run, read second by second.
struct Overload {
    struct Second {
        var second: Int
        var offered: Int
        var fired: Int
        var lagP99: Double
    }

    let sample: Sample
    let phases: [Phase]
    let ceiling: Int
    /// The lag bound of the ceiling, in milliseconds.
    let bound: Double

    /// Fires a second while the overload was offered (its due times' span).
    var overloadRate: Double {
        let end = sample.start + phases[0].seconds
        return Double(sample.fires.count { $0.at >= sample.start && $0.at < end }) / phases[0].seconds
    }

    /// The timers due (more than the bound before) the end of the overload that had not fired
    /// by then.
    var backlogAtEnd: Int {
        let end = sample.start + phases[0].seconds
        let due = sample.fires.count { $0.at - $0.lag <= end - bound / 1000 }
        return max(due - sample.fires.count { $0.at < end }, 0)
    }

    /// Fires a second from the end of the overload until the backlog was gone — every timer due
    /// more than the bound before a fire had fired by then; `nil` if that never happened.
    var drainRate: Double? {
        let end = sample.start + phases[0].seconds
        let fires = sample.fires.map(\.at).sorted()
        // Each fire's due time is its start minus its lag.
        let dues = sample.fires.map { $0.at - $0.lag }.sorted()
        let before = fires.count { $0 < end }
        var dueIndex = 0
        for (index, at) in fires.enumerated() where at >= end {
            while dueIndex < dues.count, dues[dueIndex] <= at - bound / 1000 { dueIndex += 1 }
            guard index + 1 >= dueIndex else { continue }
            return at > end ? Double(index + 1 - before) / (at - end) : nil
        }
        return nil
    }

    /// What became of the backlog after the overload, in words.
    var drainDescription: String {
        guard backlogAtEnd > 0 else { return "no backlog formed (kept up)" }
        guard let rate = drainRate else { return "a backlog of \(backlogAtEnd) never cleared" }
        return String(format: "a backlog of %d drained at %.0f/s", backlogAtEnd, rate)
    }

    /// Offered (by due time), fired and lag p99 (by fire time), per second from the first due time.
    var series: [Second] {
        let seconds = Int((phases.reduce(0) { $0 + $1.seconds } + 5).rounded(.up))
        var offered = [Int](repeating: 0, count: seconds)
        var fired = [Int](repeating: 0, count: seconds)
        var lags = [[Double]](repeating: [], count: seconds)
        for fire in sample.fires {
            let due = Int((fire.at - fire.lag - sample.start).rounded(.down))
            if due >= 0, due < seconds { offered[due] += 1 }
            let at = Int((fire.at - sample.start).rounded(.down))
            if at >= 0, at < seconds {
                fired[at] += 1
                lags[at].append(fire.lag * 1000)
            }
        }
        return (0..<seconds).map { second in
            let sorted = lags[second].sorted()
            let p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            return Second(second: second, offered: offered[second], fired: fired[second], lagP99: p99)
        }
    }
}
