import ArgumentParser
import Foundation

@main
struct TimerKitBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timerkit-bench",
        abstract: "Compares TimerKit's timers with Dispatch, Foundation, Swift concurrency, AsyncAlgorithms, SwiftNIO and the OS floor.",
        discussion: """
            Each (scenario, peer, parameter) runs in a child process of its own, several times; the \
            tables give the median. Scenarios: \(Scenario.allCases.map(\.rawValue).joined(separator: ", ")) \
            (busy selects both busy variants). Peers: \(allPeers.map { $0.name }.joined(separator: ", ")).
            """)

    @Flag(help: "Fewer fires, operations and runs, and no TimerKit variants: finishes in under two minutes.")
    var quick = false

    @Flag(help: "Print one JSON object per line (scenario, peer, figures) instead of tables.")
    var json = false

    @Option(name: .customLong("scenario"), help: "Run only this scenario (repeatable).")
    var scenarios: [String] = []

    @Option(name: .customLong("peer"), help: "Run only this peer (repeatable).")
    var peers: [String] = []

    @Option(help: "Runs per (scenario, peer, parameter); default 1 (quick) or 3–5 (full).")
    var runs: Int?

    @Option(help: "Multiply every child's hard timeout by this (for slow machines).")
    var timeoutFactor: Double = 1

    @Option(name: .customLong("json-file"), help: "Also write the JSON lines to this file.")
    var jsonFile: String?

    @Option(help: "Write an SVG of the precision scenario's lateness distribution per peer.")
    var plot: String?

    @Flag(help: .hidden) var child = false
    @Option(help: .hidden) var parameter = ""

    func validate() throws {
        for name in scenarios where Scenario.matching(name).isEmpty {
            throw ValidationError("unknown scenario \(name); known: \(Scenario.allCases.map(\.rawValue).joined(separator: ", ")), busy")
        }
        for name in peers where peerType(named: name) == nil {
            throw ValidationError("unknown peer \(name); known: \(allPeers.map { $0.name }.joined(separator: ", "))")
        }
        if child && (scenarios.count != 1 || peers.count != 1) {
            throw ValidationError("--child needs exactly one --scenario and one --peer")
        }
        if let runs, runs < 1 { throw ValidationError("--runs must be at least 1") }
        if !(timeoutFactor > 0) { throw ValidationError("--timeout-factor must be positive") }
    }

    func run() throws {
        if child {
            runChild()
        }
        let selectedScenarios =
            scenarios.isEmpty ? Scenario.allCases : Scenario.allCases.filter { s in scenarios.contains { Scenario.matching($0).contains(s) } }
        // Quick runs leave out TimerKit's variants (timerkit-heap, timerkit-timer) unless named.
        let selectedPeers = peers.isEmpty ? allPeers.filter { !quick || !$0.isVariant } : allPeers.filter { peers.contains($0.name) }
        let runner = Runner(quick: quick, runsOverride: runs, timeoutFactor: timeoutFactor)
        let began = Date()
        let loadBefore = Self.loadAverage()
        let results = runner.run(scenarios: selectedScenarios, peers: selectedPeers)
        let wall = Date().timeIntervalSince(began)
        let load =
            "load average (1, 5, 15 min) \(loadBefore) at the start, \(Self.loadAverage()) at the end; \(ProcessInfo.processInfo.activeProcessorCount) cores"
        let lines = results.map(\.jsonLine)
        if let jsonFile {
            try (lines.joined(separator: "\n") + "\n").write(toFile: jsonFile, atomically: true, encoding: .utf8)
        }
        if json {
            for line in lines { print(line) }
        } else {
            print(Report.markdown(results, scenarios: selectedScenarios, peers: selectedPeers, quick: quick, wall: wall, load: load))
        }
        if let plot {
            // The precision plot at the path given; the scaling plot beside it, "-scaling" added.
            var written: [String] = []
            if results.contains(where: { $0.scenario == .precision && $0.status == .ok }) {
                try Plot.precisionSVG(results).write(toFile: plot, atomically: true, encoding: .utf8)
                written.append(plot)
            }
            if results.contains(where: { $0.scenario == .mtchurn && $0.status == .ok }) {
                let path = plot.hasSuffix(".svg") ? String(plot.dropLast(4)) + "-scaling.svg" : plot + "-scaling.svg"
                try Plot.scalingSVG(results).write(toFile: path, atomically: true, encoding: .utf8)
                written.append(path)
            }
            for path in written { FileHandle.standardError.write(Data("wrote \(path)\n".utf8)) }
        }
        FileHandle.standardError.write(Data(String(format: "total wall time %.1f s\n", wall).utf8))
    }

    /// The first three fields of /proc/loadavg, or "unknown".
    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// In a child: run one (scenario, peer, parameter), print one JSON line, and exit without
    /// tearing the peer down (some peers' threads never end).
    private func runChild() -> Never {
        let scenario = Scenario.matching(scenarios[0])[0]
        let type = peerType(named: peers[0])!
        var fields: Figures = [("scenario", .string(scenario.rawValue)), ("peer", .string(type.name))]
        do {
            fields += try scenario.run(type, parameter: parameter, quick: quick)
        } catch {
            fields.append(("error", .string(String(describing: error))))
        }
        FileHandle.standardOutput.write(Data((JSONValue.object(fields).rendered + "\n").utf8))
        Foundation.exit(0)
    }
}
