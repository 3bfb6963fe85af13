import Foundation

/// The outcome of one (scenario, peer, parameter) over its runs.
struct Result: Sendable {
    enum Status: String, Sendable {
        case ok
        case notApplicable = "n/a"
        case timeout
        case failed
    }

    let scenario: Scenario
    let peer: String
    let parameter: String
    var status: Status
    /// The median of each figure over the successful runs.
    var figures: Figures = []
    var runs = 0
    var okRuns = 0
    var timeouts = 0
    /// The smallest and largest value of each numeric figure over the successful runs.
    var spread: [String: (min: Double, max: Double)] = [:]
    /// Each successful run's figures, in run order: run k of every peer ran close in time (the runs
    /// are interleaved), so per-run ratios pair them.
    var perRun: [Figures] = []
    /// Every run's lateness samples (precision only), pooled.
    var samples: [Double] = []
    var note = ""

    func number(_ key: String) -> Double? { figures[key]?.number }

    var jsonLine: String {
        var fields: Figures = [("scenario", .string(scenario.rawValue)), ("peer", .string(peer))]
        if status != .ok { fields.append(("status", .string(status.rawValue))) }
        fields += figures.filter { $0.0 != "scenario" && $0.0 != "peer" }
        if status == .ok || okRuns > 0 { fields.append(("runs", .int(Int64(okRuns)))) }
        if okRuns > 1 {
            let ranges = figures.compactMap { key, _ in spread[key].map { (key, JSONValue.array([.double($0.min), .double($0.max)])) } }
            fields.append(("spread", .object(ranges)))
        }
        if timeouts > 0 { fields.append(("timeouts", .int(Int64(timeouts)))) }
        if !note.isEmpty { fields.append(("note", .string(note))) }
        return JSONValue.object(fields).rendered
    }
}

/// Runs each selected (scenario, peer, parameter) in child processes and gathers medians.
struct Runner {
    let quick: Bool
    let runsOverride: Int?
    let timeoutFactor: Double

    private static let executable: String = {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }()

    /// Runs are interleaved — run 1 of every peer, then run 2 of every peer, … — so that a noisy
    /// spell on the machine spreads over the peers instead of landing on one.
    func run(scenarios: [Scenario], peers: [any Peer.Type]) -> [Result] {
        var results: [Result] = []
        for scenario in scenarios {
            for parameter in scenario.parameters(quick: quick) {
                let runs = runsOverride ?? scenario.runs(quick: quick)
                var outcomes = peers.map { peer in
                    var result = Result(scenario: scenario, peer: peer.name, parameter: parameter, status: .ok)
                    if !peer.capabilities.isSuperset(of: scenario.requirements(parameter: parameter)) { result.status = .notApplicable }
                    return result
                }
                var collected = peers.map { _ in [Figures]() }
                for index in 1...runs {
                    for (slot, peer) in peers.enumerated() where outcomes[slot].status == .ok && outcomes[slot].timeouts == 0 {
                        runOnce(scenario, peer, parameter, index: index, of: runs, into: &outcomes[slot], &collected[slot])
                    }
                }
                for (outcome, figures) in zip(outcomes, collected) {
                    results.append(outcome.status == .ok ? Self.finish(outcome, figures) : outcome)
                }
            }
        }
        return results
    }

    /// One child run; a peer that timed out once is not run again (it would time out again).
    private func runOnce(
        _ scenario: Scenario, _ peer: any Peer.Type, _ parameter: String, index: Int, of runs: Int, into result: inout Result, _ collected: inout [Figures]
    ) {
        let timeout = scenario.timeout(parameter: parameter, quick: quick) * timeoutFactor
        var arguments = ["--child", "--scenario", scenario.rawValue, "--peer", peer.name, "--parameter", parameter]
        if quick { arguments.append("--quick") }
        let label = "\(scenario.rawValue) \(peer.name)\(parameter.isEmpty ? "" : " \(parameter)") run \(index)/\(runs)"
        let began = Date()
        let outcome = Self.spawn(arguments, timeout: timeout)
        let seconds = Date().timeIntervalSince(began)
        result.runs += 1
        switch outcome {
        case .figures(let figures):
            if let error = figures["error"]?.text {
                result.note = error
                log(String(format: "%@: failed (%@) %.1f s", label, error, seconds))
            } else {
                collected.append(figures)
                log(String(format: "%@: ok %.1f s", label, seconds))
            }
        case .timeout:
            result.timeouts += 1
            log(String(format: "%@: timeout after %.0f s", label, timeout))
        case .failed(let reason):
            result.note = reason
            log("\(label): failed: \(reason)")
        }
    }

    private static func finish(_ result: Result, _ collected: [Figures]) -> Result {
        var result = result
        result.okRuns = collected.count
        if collected.isEmpty {
            result.status = result.timeouts > 0 ? .timeout : .failed
            return result
        }
        result.figures = medians(collected)
        result.perRun = collected
        for (key, _) in result.figures {
            let values = collected.compactMap { $0[key]?.number }.filter { !$0.isNaN }
            if let low = values.min(), let high = values.max() { result.spread[key] = (low, high) }
        }
        result.samples = collected.flatMap { figures -> [Double] in
            guard case .array(let values)? = figures["samples_us"] else { return [] }
            return values.compactMap(\.number)
        }
        return result
    }

    /// The median of each numeric figure; the first run's value for the others.
    static func medians(_ runs: [Figures]) -> Figures {
        guard let first = runs.first else { return [] }
        return first.compactMap { key, value in
            switch value {
            case .array: return nil
            case .int, .double:
                return (key, .double(median(runs.compactMap { $0[key]?.number })))
            default: return (key, value)
            }
        }
    }

    enum Outcome {
        case figures(Figures)
        case timeout
        case failed(String)
    }

    /// Runs this executable as a child with a hard timeout (SIGKILL), and parses its JSON line.
    static func spawn(_ arguments: [String], timeout: Double) -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        let outputData = Box(Data())
        let errorData = Box(Data())
        let reading = DispatchGroup()
        for (pipe, box) in [(output, outputData), (errors, errorData)] {
            reading.enter()
            DispatchQueue.global().async {
                box.value = pipe.fileHandleForReading.readDataToEndOfFile()
                reading.leave()
            }
        }
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do {
            try process.run()
        } catch {
            return .failed("cannot start \(executable): \(error)")
        }
        var timedOut = false
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        reading.wait()
        if timedOut { return .timeout }
        let text = String(decoding: outputData.value, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            let stderr = String(decoding: errorData.value, as: UTF8.self).split(separator: "\n").suffix(3).joined(separator: " | ")
            return .failed("exit \(process.terminationStatus), no result; \(stderr)")
        }
        // Keep the child's field order.
        let order = Self.keyOrder(String(line))
        let figures: Figures = order.compactMap { key in object[key].map { (key, JSONValue(any: $0)) } }
        return .figures(figures)
    }

    /// The keys of a flat JSON object line, in order (values here never contain `":`).
    private static func keyOrder(_ line: String) -> [String] {
        var keys: [String] = []
        var depth = 0
        var index = line.startIndex
        var inString = false
        var current = ""
        var lastString = ""
        while index < line.endIndex {
            let character = line[index]
            if inString {
                if character == "\\" {
                    index = line.index(after: index)
                } else if character == "\"" {
                    inString = false
                    lastString = current
                } else {
                    current.append(character)
                }
            } else {
                switch character {
                case "\"":
                    inString = true
                    current = ""
                case "{", "[": depth += 1
                case "}", "]": depth -= 1
                case ":": if depth == 1 { keys.append(lastString) }
                default: break
                }
            }
            index = line.index(after: index)
        }
        return keys
    }

    private func log(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
