import ArgumentParser
import Foundation
import TimerKit

/// The cost of a cron expression's next occurrence: TimerKit's ``CalendarSchedule`` beside
/// croniter (PyPI, `Benchmarks/peers/croniter/bench.py`), in interleaved rounds on the same
/// machine, from the same start in the same zone. Reports medians with their spread, the ratio,
/// and the machine's load.
@main
struct CronBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timerkit-cron-bench",
        abstract: "Next-occurrence cost of cron expressions: TimerKit beside croniter, in interleaved rounds.")

    @Option(help: "Rounds; each runs TimerKit then croniter once per expression.") var rounds = 5
    @Option(help: "The Python of a virtual environment with croniter (made in .build-bench-venv when absent).") var python: String?
    @Flag(help: "TimerKit only (no Python).") var withoutPeer = false

    /// The expressions, as the peer's script names them, and how many successive occurrences a run
    /// takes (the sparse one fewer: each is years apart).
    static let expressions: [(text: String, count: Int)] = [
        ("* * * * *", 10_000), ("0 0 29 2 *", 200), ("0 9 * * 5L", 10_000), ("0 9 * * 1#1", 10_000)
    ]
    static let zone = TimeZone(identifier: "Europe/Berlin")!
    /// 2026-01-01T00:00:00+01:00, the peer's start.
    static let start = Date(timeIntervalSince1970: 1_767_222_000)

    func run() throws {
        let python = withoutPeer ? nil : try preparePython()
        var ours: [String: [Double]] = [:]
        var theirs: [String: [Double]] = [:]
        let loadBefore = Self.loadAverage()
        for round in 1...rounds {
            for (text, count) in Self.expressions {
                let nanoseconds = try Self.measure(text, count: count)
                ours[text, default: []].append(nanoseconds)
                print("round \(round): TimerKit \(text): \(Int(nanoseconds)) ns per next occurrence")
            }
            if let python {
                for (text, figures) in try Self.croniter(python) {
                    theirs[text, default: []].append(figures)
                    print("round \(round): croniter \(text): \(Int(figures)) ns per get_next")
                }
            }
        }
        let loadAfter = Self.loadAverage()
        print("")
        print("| expression | TimerKit ns/next, median (min–max) | croniter ns/next, median (min–max) | croniter ÷ TimerKit |")
        print("|---|---|---|---|")
        for (text, _) in Self.expressions {
            let mine = ours[text] ?? []
            let peer = theirs[text] ?? []
            let ratio = peer.isEmpty ? "—" : String(format: "%.0f×", Self.median(peer) / Self.median(mine))
            print("| `\(text)` | \(Self.summary(mine)) | \(peer.isEmpty ? "—" : Self.summary(peer)) | \(ratio) |")
        }
        print("")
        print("\(rounds) interleaved rounds, Europe/Berlin from 2026-01-01; load average \(loadBefore) before, \(loadAfter) after")
    }

    /// One run: `count` successive next occurrences, after a tenth as many untimed; ns per call.
    static func measure(_ text: String, count: Int) throws -> Double {
        let schedule = try CalendarSchedule(cron: text, in: zone)
        var date = start
        for _ in 0..<(count / 10) { date = schedule.nextOccurrence(after: date)! }
        date = start
        let began = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count { date = schedule.nextOccurrence(after: date)! }
        let elapsed = DispatchTime.now().uptimeNanoseconds - began
        precondition(date > start)
        return Double(elapsed) / Double(count)
    }

    /// One run of the peer's script: ns per `get_next` by expression.
    static func croniter(_ python: String) throws -> [String: Double] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [peerScript, "--runs", "1"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let expressions = object["expressions"] as? [String: [String: Any]]
        else { throw ValidationError("the croniter script failed (status \(process.terminationStatus))") }
        return expressions.compactMapValues { ($0["median_ns"] as? NSNumber)?.doubleValue }
    }

    static var peerScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("peers/croniter/bench.py").path
    }

    /// `--python`, or `.build-bench-venv` at the repository's root, made once with the peer's pins.
    func preparePython() throws -> String {
        if let python { return python }
        let peer = URL(fileURLWithPath: Self.peerScript).deletingLastPathComponent()
        let root = peer.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let python = root.appendingPathComponent(".build-bench-venv/bin/python3").path
        if !FileManager.default.fileExists(atPath: python) {
            try Self.wait(for: "/usr/bin/env", ["python3", "-m", "venv", root.appendingPathComponent(".build-bench-venv").path])
        }
        // Idempotent: the venv may have been made for another peer.
        try Self.wait(for: python, ["-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", peer.appendingPathComponent("requirements.txt").path])
        return python
    }

    static func wait(for executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("\(executable) \(arguments.joined(separator: " ")) failed") }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func summary(_ values: [Double]) -> String {
        "\(format(median(values))) (\(format(values.min() ?? .nan))–\(format(values.max() ?? .nan)))"
    }

    static func format(_ nanoseconds: Double) -> String {
        nanoseconds >= 10_000
            ? String(format: "%.0f µs", nanoseconds / 1000)
            : nanoseconds >= 1000 ? String(format: "%.1f µs", nanoseconds / 1000) : String(format: "%.0f ns", nanoseconds)
    }

    static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").split(separator: " ").prefix(3).joined(separator: " ")
    }
}
