import ArgumentParser
import Foundation
import TimerKitDurable
import TimerKitPostgres

/// Operating a million durable timers: the first page of `timers(matching:)` (what
/// `timerkit durable ls` shows) with each filter, a page deep in the cursor, `stats()`, pausing a
/// quarter of them by handler, and `timerkit durable ls` itself as a process — on SQLite and on
/// PostgreSQL, each figure the median of several runs with its min–max, and the machine's load.
@main
struct QueryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timerkit-query-bench",
        abstract: "Durable timers: listing, counting and pausing a million stored timers, on SQLite and PostgreSQL.")

    @Option(help: "Stored timers.")
    var stored = 1_000_000

    @Option(help: "Runs of each query; the report gives medians with min–max.")
    var runs = 7

    @Option(help: "The built timerkit executable, to time `timerkit durable ls` as a process (optional).")
    var cli: String?

    @Option(help: "A PostgreSQL URL (default: TIMERKIT_POSTGRES_URL); none measures SQLite only.")
    var postgres: String?

    @Option(help: "A folder for the SQLite file (default: the system's temporary folder).")
    var folder: String?

    func validate() throws {
        guard stored >= 1_000, runs >= 1 else { throw ValidationError("--stored at least 1000, --runs at least 1") }
    }

    func run() async throws {
        let loadBefore = loadAverage()
        var sections: [String] = []
        let path = (folder ?? NSTemporaryDirectory()) + "/timerkit-query-bench-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let sqlite = try DurableTimers(path: path, namespace: "bench", options: Self.options)
        sections.append(try await measure(sqlite, store: "SQLite", database: "sqlite:\(path)"))
        if let url = postgres ?? ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], let configuration = PostgresURL.configuration(url) {
            let namespace = "bench-\(UUID().uuidString.prefix(8))"
            let timers = try await DurableTimers(postgres: configuration, namespace: namespace, options: Self.options)
            sections.append(try await measure(timers, store: "PostgreSQL", database: url, namespace: namespace))
            // The namespace's rows stay (removing a million takes as long as storing them): run it
            // against a throwaway server, as `Scripts/with-postgres` starts.
        }
        print(sections.joined(separator: "\n\n"))
        print("")
        print(
            "load average (1, 5, 15 min) \(loadBefore) at the start, \(loadAverage()) at the end; \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    static var options: DurableTimers.Options {
        var options = DurableTimers.Options()
        options.durability = .normal
        options.onError = { _ in }
        return options
    }

    struct Payload: Codable, Sendable { var order: Int }

    static let handlers = ["mail", "sms", "invoice", "expire"]

    /// Fills the namespace, then times each query `runs` times.
    func measure(_ timers: DurableTimers, store: String, database: String, namespace: String = "bench") async throws -> String {
        for handler in Self.handlers { try await timers.register(handler, payload: Payload.self) { _, _ in } }
        let now = Date()
        var filled = 0
        let fillStart = ContinuousClock.now
        while filled < stored {
            let count = min(10_000, stored - filled)
            for (index, handler) in Self.handlers.enumerated() {
                let batch = (0..<count).filter { ($0 + filled) % Self.handlers.count == index }.map { offset in
                    let number = filled + offset
                    return (
                        key: String(format: "order/%07d", number), at: now.addingTimeInterval(3_600 + Double(number % 86_400)), payload: Payload(order: number)
                    )
                }
                try await timers.schedule(batch, handler: handler)
            }
            filled += count
        }
        let fill = ContinuousClock.now - fillStart
        FileHandle.standardError.write(Data("\(store): \(stored) timers stored in \(fill)\n".utf8))

        var rows: [(String, [Double])] = []
        func time(_ name: String, _ body: () async throws -> Void) async throws {
            var samples: [Double] = []
            for _ in 0..<runs {
                let start = ContinuousClock.now
                try await body()
                samples.append((ContinuousClock.now - start).milliseconds)
            }
            rows.append((name, samples))
            FileHandle.standardError.write(Data("\(store): \(name): \(samples.map { String(format: "%.1f", $0) }.joined(separator: " ")) ms\n".utf8))
        }
        try await time("first page of 100, no filter") {
            let page = try await timers.timers(matching: DurableTimerQuery(limit: 100))
            precondition(page.timers.count == 100)
        }
        try await time("first page, --handler sms") {
            let page = try await timers.timers(matching: DurableTimerQuery(handler: "sms", limit: 100))
            precondition(page.timers.count == 100)
        }
        // The middle key less its last five digits: "order/05" of a million (100,000 keys match),
        // "order/00" of 4,000 (all of them).
        let prefix = String(String(format: "order/%07d", stored / 2).dropLast(5))
        try await time("first page, --prefix \(prefix)") {
            let page = try await timers.timers(matching: DurableTimerQuery(keyPrefix: prefix, limit: 100))
            precondition(page.timers.count == 100)
        }
        try await time("first page, --status scheduled") {
            let page = try await timers.timers(matching: DurableTimerQuery(statuses: [.scheduled], limit: 100))
            precondition(page.timers.count == 100)
        }
        try await time("page 5,000 of 100 (a cursor mid-table)") {
            let page = try await timers.timers(
                matching: DurableTimerQuery(limit: 100, after: DurableTimerQuery.Cursor(after: String(format: "order/%07d", stored / 2))))
            precondition(page.timers.count == 100)
        }
        try await time("--status due, none due (the whole table read)") {
            let page = try await timers.timers(matching: DurableTimerQuery(statuses: [.due], limit: 100))
            precondition(page.timers.isEmpty)
        }
        try await time("stats() (counts by handler and status)") {
            let stats = try await timers.stats()
            precondition(stats.totals.values.reduce(0, +) == stored)
        }
        if let cli {
            try await time("`timerkit durable ls` as a process (start to exit)") {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: cli)
                process.arguments = ["durable", "ls", "--db", database, "--namespace", namespace, "--limit", "100"]
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
                precondition(process.terminationStatus == 0, "timerkit durable ls exited \(process.terminationStatus)")
            }
            try await time("`timerkit --version` as a process (the start-up alone)") {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: cli)
                process.arguments = ["--version"]
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
            }
        }
        // Pausing a quarter of them by handler, and resuming: batches of 2,000, each a short write.
        var pauses: [Double] = []
        var resumes: [Double] = []
        for _ in 0..<min(runs, 3) {
            var start = ContinuousClock.now
            let paused = try await timers.pause(handler: "mail")
            pauses.append((ContinuousClock.now - start).milliseconds)
            start = ContinuousClock.now
            let resumed = try await timers.resume(handler: "mail")
            resumes.append((ContinuousClock.now - start).milliseconds)
            precondition(paused == stored / 4 && resumed == paused, "paused \(paused), resumed \(resumed)")
        }
        rows.append(("pause(handler:) of \(stored / 4) timers", pauses))
        rows.append(("resume(handler:) of them", resumes))

        var lines = [
            "### \(store): \(stored) stored timers (filled in \(fill))", "",
            "| operation | median ms | min–max ms |", "|---|---|---|"
        ]
        for (name, samples) in rows {
            let sorted = samples.sorted()
            lines.append(String(format: "| %@ | %.1f | %.1f–%.1f |", name, median(sorted), sorted.first ?? .nan, sorted.last ?? .nan))
        }
        return lines.joined(separator: "\n")
    }
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1e3 + Double(attoseconds) / 1e15
    }
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
