import ArgumentParser
import Foundation
@_spi(Benchmarks) import TimerKitDurable

/// Durable timers on SQLite: schedule and fire throughput, and the lag from due time to handler
/// start — TimerKit's armed design beside the polling design job queues use (a 1 s poll of due
/// rows, on the same store and the same claim path), measured in the same run. Runs interleave;
/// the report gives each figure's median with its min–max over the runs, and the machine's load.
@main
struct DurableBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timerkit-durable-bench",
        abstract: "Durable timers: throughput and lag, armed vs polled, with a backlog of stored timers.")

    @Option(help: "Stored timers (due in a day) beside the measured ones; repeatable.")
    var stored: [Int] = [10_000, 1_000_000]

    @Option(help: "Runs per size; the report gives medians with min–max.")
    var runs = 5

    @Option(help: "Timers whose lag is measured, due over --window seconds.")
    var lagTimers = 2_000

    @Option(help: "Seconds over which the measured timers come due.")
    var window = 4.0

    @Option(help: "Timers due at once for the fire-throughput figure.")
    var fireTimers = 20_000

    @Option(help: "full or normal (synchronous = FULL or NORMAL).")
    var durability = "full"

    @Option(help: "The run history: on (the default: 10 runs per timer) or off.")
    var history = "on"

    @Option(help: "A folder for the database files (default: the system's temporary folder).")
    var folder: String?

    func validate() throws {
        guard runs >= 1, lagTimers >= 1, fireTimers >= 1, window > 0, stored.allSatisfy({ $0 >= 10_000 }) else {
            throw ValidationError("runs, timers and the window must be positive, and --stored at least 10000")
        }
        guard ["full", "normal"].contains(durability) else { throw ValidationError("--durability is full or normal") }
        guard ["on", "off"].contains(history) else { throw ValidationError("--history is on or off") }
    }

    func run() async throws {
        let loadBefore = loadAverage()
        var results: [Int: [Figures]] = [:]
        for run in 1...runs {
            for size in stored {
                let figures = try await measure(stored: size)
                results[size, default: []].append(figures)
                FileHandle.standardError.write(Data("run \(run)/\(runs), \(size) stored: \(figures.summary)\n".utf8))
            }
        }
        print(
            report(
                results,
                load:
                    "load average (1, 5, 15 min) \(loadBefore) at the start, \(loadAverage()) at the end; \(ProcessInfo.processInfo.activeProcessorCount) cores"
            ))
    }

    struct Figures {
        var batchedSchedulesPerSecond = 0.0
        var singleSchedulesPerSecond = 0.0
        var firesPerSecond = 0.0
        var armedLag: [Double] = []  // ms
        var polledLag: [Double] = []  // ms

        var summary: String {
            String(
                format: "batched %.0f/s, single %.0f/s, fires %.0f/s, armed lag p99 %.2f ms, polled lag p99 %.0f ms", batchedSchedulesPerSecond,
                singleSchedulesPerSecond, firesPerSecond, quantile(armedLag, 0.99), quantile(polledLag, 0.99))
        }
    }

    /// Records each handler start's lag behind its timer's due time.
    final class LagLog: @unchecked Sendable {
        private let lock = NSLock()
        private var lags: [Double] = []
        private var count = 0

        func record(due: Date) {
            let lag = Date().timeIntervalSince(due) * 1_000
            lock.withLock {
                lags.append(lag)
                count += 1
            }
        }
        var fired: Int { lock.withLock { count } }
        func take() -> [Double] {
            lock.withLock {
                defer { lags = [] }
                return lags
            }
        }
    }

    struct Due: Codable, Sendable { var due: Double }

    func measure(stored size: Int) async throws -> Figures {
        let directory = URL(fileURLWithPath: folder ?? NSTemporaryDirectory()).appendingPathComponent("timerkit-durable-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = DurableTimers.Options()
        options.durability = durability == "full" ? .full : .normal
        options.catchUpRate = 1_000_000_000
        if history == "off" { options.history = .off }
        options.onError = { error in FileHandle.standardError.write(Data("durable: \(error)\n".utf8)) }
        let path = directory.appendingPathComponent("timers.sqlite").path
        let timers = try DurableTimers(path: path, options: options)
        let log = LagLog()
        try await timers.register("bench", payload: Due.self) { payload, _ in log.record(due: Date(timeIntervalSince1970: payload.due)) }
        var figures = Figures()

        // Schedules, batched: the backlog (due in a day), in transactions of 10,000.
        let later = Date().addingTimeInterval(86_400)
        var began = Date()
        var index = 0
        while index < size {
            let count = min(10_000, size - index)
            let batch = (index..<index + count).map { (key: "backlog/\($0)", at: later, payload: Due(due: later.timeIntervalSince1970)) }
            try await timers.schedule(batch, handler: "bench")
            index += count
        }
        figures.batchedSchedulesPerSecond = Double(size) / Date().timeIntervalSince(began)

        // Schedules, one transaction each.
        began = Date()
        for k in 0..<1_000 {
            try await timers.schedule(key: "single/\(k)", at: later, handler: "bench", payload: Due(due: later.timeIntervalSince1970))
        }
        figures.singleSchedulesPerSecond = 1_000 / Date().timeIntervalSince(began)

        // Lag, armed: timers due over the window, the runner running.
        await timers.start()
        let start = Date().addingTimeInterval(0.5)
        for k in 0..<lagTimers {
            let due = start.addingTimeInterval(window * Double(k) / Double(lagTimers))
            try await timers.schedule(key: "armed/\(k)", at: due, handler: "bench", payload: Due(due: due.timeIntervalSince1970))
        }
        try await waitUntil { log.fired >= lagTimers }
        figures.armedLag = log.take()

        // Fire throughput: many due at once.
        let now = Date()
        let burst = (0..<fireTimers).map { (key: "burst/\($0)", at: now, payload: Due(due: now.timeIntervalSince1970)) }
        began = Date()
        try await timers.schedule(burst, handler: "bench")
        let scheduled = Date()
        try await waitUntil { log.fired >= lagTimers + fireTimers }
        figures.firesPerSecond = Double(fireTimers) / Date().timeIntervalSince(scheduled)
        _ = log.take()
        await timers.shutdown()

        // Lag, polled: the same store, a poll of due rows every second.
        let poller = try DurableTimers(path: path, options: options)
        try await poller.register("bench", payload: Due.self) { payload, _ in log.record(due: Date(timeIntervalSince1970: payload.due)) }
        let pollStart = Date().addingTimeInterval(0.5)
        for k in 0..<lagTimers {
            let due = pollStart.addingTimeInterval(window * Double(k) / Double(lagTimers))
            try await poller.schedule(key: "polled/\(k)", at: due, handler: "bench", payload: Due(due: due.timeIntervalSince1970))
        }
        let pollBase = ContinuousClock.now
        var polls = 0
        while log.fired < 2 * lagTimers + fireTimers, polls < Int(window) + 30 {
            polls += 1
            try await Task.sleep(until: pollBase + .seconds(polls), clock: .continuous)
            _ = try await poller._pollDueTimers()
        }
        figures.polledLag = log.take()
        await poller.shutdown()
        return figures
    }

    func waitUntil(_ condition: () -> Bool) async throws {
        let end = Date().addingTimeInterval(300)
        while !condition() {
            guard Date() < end else { throw ValidationError("timed out waiting for the fires") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    func report(_ results: [Int: [Figures]], load: String) -> String {
        var lines = [
            "Durable timers on SQLite (durability \(durability)): \(runs) runs per size, medians with min–max. \(lagTimers) timers due over \(window) s for the lag; \(fireTimers) due at once for fires/s.",
            "",
            "| stored | schedules/s batched | schedules/s single | fires/s | armed lag p50 / p99 / max (ms) | polled (1 s) lag p50 / p99 / max (ms) | p99 polled ÷ armed |",
            "|---|---|---|---|---|---|---|"
        ]
        for size in stored {
            let runs = results[size] ?? []
            func spread(_ values: [Double], _ format: String) -> String {
                let sorted = values.sorted()
                guard let low = sorted.first, let high = sorted.last else { return "–" }
                return String(format: "\(format) (\(format)–\(format))", median(sorted), low, high)
            }
            let armed = [0.5, 0.99, 1.0].map { q in spread(runs.map { quantile($0.armedLag, q) }, "%.2f") }.joined(separator: " / ")
            let polled = [0.5, 0.99, 1.0].map { q in spread(runs.map { quantile($0.polledLag, q) }, "%.0f") }.joined(separator: " / ")
            let ratio = spread(runs.map { quantile($0.polledLag, 0.99) / quantile($0.armedLag, 0.99) }, "%.0f×")
            lines.append(
                "| \(size) | \(spread(runs.map(\.batchedSchedulesPerSecond), "%.0f")) | \(spread(runs.map(\.singleSchedulesPerSecond), "%.0f")) | \(spread(runs.map(\.firesPerSecond), "%.0f")) | \(armed) | \(polled) | \(ratio) |"
            )
        }
        lines.append("")
        lines.append(load)
        return lines.joined(separator: "\n")
    }
}

func quantile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

func median(_ sorted: [Double]) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

func loadAverage() -> String {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "unknown" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}
