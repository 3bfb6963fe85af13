// Durable timers shared by a fleet on PostgreSQL: 1, 2 and 4 instance processes fire the timers of
// one namespace, armed (TimerKit's design: the horizon in the engine, NOTIFY for new writes) beside a
// polling baseline (each instance claims the due rows every second, as job queues do), in one run.
//
//   Scripts/with-postgres swift run -c release --package-path Benchmarks timerkit-fleet-bench
//
// Each instance is this executable started again with `instance`; it logs one line per fire with
// its lateness on the database's clock. Reported: schedules/s (batched, from the coordinator),
// fires/s across the fleet (timers ÷ (last fire − first due)), lag p50/p99/max, as medians of the
// runs with their spread, and the machine's load.
import ArgumentParser
import Foundation
import PostgresNIO
import TimerKit
@_spi(Benchmarks) import TimerKitDurable
import TimerKitPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct FleetBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timerkit-fleet-bench", abstract: "Durable timers on PostgreSQL across 1, 2 and 4 instances, armed vs polled.",
        subcommands: [Run.self, Storm.self, Backlog.self, Throughput.self, Ceiling.self, Instance.self], defaultSubcommand: Run.self)
}

struct Instance: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One instance of the fleet (started by `run`).")

    @Argument var url: String
    @Argument var namespace: String
    @Argument var log: String
    @Option var mode: String = "armed"
    @Option(help: "The runner's horizon, in seconds.") var horizon = 60
    @Option(help: "The runner's catch-up rate; the library's default when absent.") var catchUpRate: Int?
    @Option(help: "The runner's handler slots (maxConcurrentHandlers); the library's default when absent.") var slots: Int?
    @Option(help: "The runner's lease, in seconds; the library's default when absent.") var lease: Int?
    @Option(help: "A name for this instance's lines of the log.") var name = "i"

    /// The settings the armed-and-polled, storm and backlog runs were published with: 64 slots,
    /// a catch-up rate of 100,000 a second and a 5-second lease.
    static let tuned = ["--slots", "64", "--catch-up-rate", "100000", "--lease", "5"]

    func run() async throws {
        guard let configuration = PostgresURL.configuration(url) else { throw ValidationError("not a PostgreSQL URL: \(url)") }
        let descriptor = open(log, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        var options = DurableTimers.Options()
        if let lease { options.lease = .seconds(lease) }
        if let slots { options.maxConcurrentHandlers = slots }
        if let catchUpRate { options.catchUpRate = catchUpRate }
        options.horizon = .seconds(horizon)
        options.onError = { error in FileHandle.standardError.write(Data("instance: \(error)\n".utf8)) }
        let name = name
        options.onEvent = { event in
            switch event {
            case .loaded(let scope, let timers, let duration):
                append(
                    "load \(name) \(scope.rawValue) \(timers) \(Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15)",
                    to: descriptor)
            case .claimed(let requested, let claimed):
                append("claim \(name) \(requested) \(claimed)", to: descriptor)
            default:
                break
            }
        }
        // The resident set, every half second (Linux: /proc/self/statm; elsewhere the peak).
        let sampler = Task {
            while !Task.isCancelled {
                append("rss \(name) \(residentKilobytes())", to: descriptor)
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        defer { sampler.cancel() }
        let timers = try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
        try await timers.register("bench", payload: Int64.self) { due, fire in
            append("fire \(fire.firedAt.timeIntervalSince1970) \(Double(fire.firedAt.timeIntervalSince1970) - Double(due) / 1e9) \(fire.key)", to: descriptor)
        }
        signal(SIGTERM, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTERM)
        if mode == "polled" {
            let polling = Task {
                while !Task.isCancelled {
                    _ = try? await timers._pollDueTimers()
                    try? await Task.sleep(for: .seconds(1))
                }
            }
            stop.setEventHandler { polling.cancel() }
            stop.resume()
            append("ready", to: descriptor)
            await polling.value
        } else {
            let running = Task { await timers.run() }
            stop.setEventHandler { running.cancel() }
            stop.resume()
            await timers.start()
            append("ready", to: descriptor)
            await running.value
        }
    }
}

/// The process's resident set now, in kilobytes (its peak where /proc is missing).
func residentKilobytes() -> Int {
    #if os(Linux)
    if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
        let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
    {
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }
    #endif
    var usage = rusage()
    #if canImport(Darwin)
    getrusage(RUSAGE_SELF, &usage)
    return Int(usage.ru_maxrss) / 1024
    #else
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Int(usage.ru_maxrss)
    #endif
}

func append(_ line: String, to descriptor: Int32) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The benchmark (the default).")

    @Option(help: "The server; TIMERKIT_POSTGRES_URL by default (Scripts/with-postgres sets it).")
    var url: String?
    @Option(help: "Runs per configuration.") var runs = 3
    @Option(help: "Timers per run.") var timers = 20_000
    @Option(help: "The seconds their due times spread over.") var spread = 2.0
    @Option(help: "Instance counts.") var instances: [Int] = [1, 2, 4]

    struct Sample {
        var schedulesPerSecond: Double
        var firesPerSecond: Double
        var lag: (p50: Double, p99: Double, max: Double)
        var fired: Int
    }

    func run() async throws {
        guard let url = url ?? ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], let configuration = PostgresURL.configuration(url) else {
            throw ValidationError("no server: pass --url or run through Scripts/with-postgres")
        }
        print("timerkit-fleet-bench: \(timers) timers due over \(spread) s per run, \(runs) runs per configuration, interleaved")
        var results: [String: [Sample]] = [:]
        for _ in 0..<runs {
            for count in instances {
                for mode in ["armed", "polled"] {
                    let sample = try await measure(url: url, configuration: configuration, instances: count, mode: mode)
                    results["\(mode) \(count)", default: []].append(sample)
                    print(
                        String(
                            format: "  %@ ×%d: %.0f fires/s, lag p50 %.1f p99 %.1f max %.1f ms, %d fired", mode, count, sample.firesPerSecond,
                            sample.lag.p50, sample.lag.p99, sample.lag.max, sample.fired))
                }
            }
        }
        var load = [Double](repeating: 0, count: 3)
        _ = getloadavg(&load, 3)
        print("\n| design | instances | batched schedules/s | fires/s | lag p50 ms | lag p99 ms | lag max ms |")
        print("|---|---|---|---|---|---|---|")
        for mode in ["armed", "polled"] {
            for count in instances {
                let samples = results["\(mode) \(count)"] ?? []
                func cell(_ values: [Double], _ format: String) -> String {
                    let sorted = values.sorted()
                    return String(format: "\(format) (\(format)–\(format))", sorted[sorted.count / 2], sorted.first!, sorted.last!)
                }
                print(
                    "| \(mode) | \(count) | \(cell(samples.map(\.schedulesPerSecond), "%.0f")) | \(cell(samples.map(\.firesPerSecond), "%.0f")) | \(cell(samples.map(\.lag.p50), "%.1f")) | \(cell(samples.map(\.lag.p99), "%.1f")) | \(cell(samples.map(\.lag.max), "%.0f")) |"
                )
            }
        }
        print(String(format: "\nload average at the end: %.2f %.2f %.2f (2 cores)", load[0], load[1], load[2]))
    }

    func measure(url: String, configuration: PostgresClient.Configuration, instances count: Int, mode: String) async throws -> Sample {
        let namespace = "bench-\(UUID().uuidString.prefix(8))"
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        var processes: [Process] = []
        defer {
            for process in processes {
                process.terminate()
                process.waitUntilExit()
            }
        }
        for _ in 0..<count {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["instance", url, namespace, log, "--mode", mode] + Instance.tuned
            try process.run()
            processes.append(process)
        }
        while lines(log).filter({ $0 == "ready" }).count < count { try await Task.sleep(for: .milliseconds(20)) }
        let scheduler = try await DurableTimers(postgres: configuration, namespace: namespace)
        try await scheduler.register("bench", payload: Int64.self) { _, _ in }
        let first = Date().addingTimeInterval(1)
        let batch = (0..<timers).map { index -> (key: String, at: Date, payload: Int64) in
            let at = first.addingTimeInterval(spread * Double(index) / Double(timers))
            return (key: "t\(index)", at: at, payload: Int64(at.timeIntervalSince1970 * 1e9))
        }
        let started = ContinuousClock.now
        for chunk in stride(from: 0, to: batch.count, by: 5_000) {
            _ = try await scheduler.schedule(Array(batch[chunk..<min(chunk + 5_000, batch.count)]), handler: "bench")
        }
        let scheduling = ContinuousClock.now - started
        let deadline = ContinuousClock.now + .seconds(120)
        var fires: [(at: Double, lag: Double)] = []
        while ContinuousClock.now < deadline {
            fires = lines(log).compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count >= 3, fields[0] == "fire", let at = Double(fields[1]), let lag = Double(fields[2]) else { return nil }
                return (at, lag)
            }
            if fires.count >= timers { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let lags = fires.map { $0.lag * 1000 }.sorted()
        let last = fires.map(\.at).max() ?? first.timeIntervalSince1970
        let seconds = Double(scheduling.components.seconds) + Double(scheduling.components.attoseconds) / 1e18
        return Sample(
            schedulesPerSecond: Double(timers) / seconds,
            firesPerSecond: Double(fires.count) / max(last - first.timeIntervalSince1970, 0.001),
            lag: (lags.isEmpty ? 0 : lags[lags.count / 2], lags.isEmpty ? 0 : lags[min(lags.count - 1, lags.count * 99 / 100)], lags.last ?? 0),
            fired: fires.count)
    }

    func lines(_ path: String) -> [Substring] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
    }
}

/// Starts instance processes of this executable and waits until each has loaded and says ready.
func launchInstances(
    _ count: Int, url: String, namespace: String, log: String, arguments: [String] = []
) async throws -> [Process] {
    var processes: [Process] = []
    for index in 0..<count {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["instance", url, namespace, log, "--name", "i\(index)"] + arguments
        try process.run()
        processes.append(process)
    }
    while logLines(log).filter({ $0 == "ready" }).count < count { try await Task.sleep(for: .milliseconds(20)) }
    return processes
}

func stopInstances(_ processes: [Process]) {
    for process in processes {
        process.terminate()
        process.waitUntilExit()
    }
}

func logLines(_ path: String) -> [Substring] {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
}

/// Median (min–max) of `values`, formatted.
func spreadCell(_ values: [Double], _ format: String) -> String {
    let sorted = values.sorted()
    guard let first = sorted.first, let last = sorted.last else { return "–" }
    return String(format: "\(format) (\(format)–\(format))", sorted[sorted.count / 2], first, last)
}

func loadAverage() -> String {
    var load = [Double](repeating: 0, count: 3)
    _ = getloadavg(&load, 3)
    return String(format: "%.2f %.2f %.2f", load[0], load[1], load[2])
}

/// Schedules `batch` through a runner that never starts, 5,000 a statement.
func scheduleAll(_ batch: [(key: String, at: Date, payload: Int64)], configuration: PostgresClient.Configuration, namespace: String) async throws {
    let scheduler = try await DurableTimers(postgres: configuration, namespace: namespace)
    try await scheduler.register("bench", payload: Int64.self) { _, _ in }
    for chunk in stride(from: 0, to: batch.count, by: 5_000) {
        _ = try await scheduler.schedule(Array(batch[chunk..<min(chunk + 5_000, batch.count)]), handler: "bench")
    }
}

/// The reload storm of issue 30: two instances hold a horizon of 200,000 timers (due minutes
/// ahead) while a writer schedules batches of 65 timers, due in two seconds, every 100 ms — each
/// batch past the size told timer by timer. Reported per instance and minute: loads of the whole
/// horizon, loads of the windows the batches touched and the timers those read; and the batches'
/// fires, each once, with their lag.
struct Storm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Batches of 65 timers every 100 ms beside 2 instances holding 200,000 timers.")

    @Option(help: "The server; TIMERKIT_POSTGRES_URL by default.") var url: String?
    @Option(help: "Runs.") var runs = 3
    @Option(help: "Timers held in the instances' horizon.") var held = 200_000
    @Option(help: "Seconds the writer writes.") var seconds = 60

    func run() async throws {
        guard let url = url ?? ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], let configuration = PostgresURL.configuration(url) else {
            throw ValidationError("no server: pass --url or run through Scripts/with-postgres")
        }
        print("timerkit-fleet-bench storm: \(held) timers held by 2 instances, 65 timers every 100 ms for \(seconds) s, \(runs) runs")
        var rows: [(horizon: Double, windows: Double, windowTimers: Double, lagP99: Double, fired: Int, written: Int)] = []
        for _ in 0..<runs {
            let namespace = "storm-\(UUID().uuidString.prefix(8))"
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace).log").path
            defer { try? FileManager.default.removeItem(atPath: log) }
            let later = Date().addingTimeInterval(300)
            try await scheduleAll(
                (0..<held).map { (key: "held-\($0)", at: later.addingTimeInterval(Double($0) / Double(held) * 200), payload: 0) }, configuration: configuration,
                namespace: namespace)
            // As autovacuum would after a bulk load: statistics that predate 200,000 rows make the
            // claims and completions scan the namespace (issue 31).
            try await analyze(configuration)
            let processes = try await launchInstances(2, url: url, namespace: namespace, log: log, arguments: ["--horizon", "600"] + Instance.tuned)
            defer { stopInstances(processes) }
            let writer = try await DurableTimers(postgres: configuration, namespace: namespace)
            try await writer.register("bench", payload: Int64.self) { _, _ in }
            let startLoads = logLines(log).count { $0.hasPrefix("load ") }
            let begin = ContinuousClock.now
            var written = 0
            var tick = 0
            while ContinuousClock.now - begin < .seconds(seconds) {
                let due = Date().addingTimeInterval(2)
                let batch = (0..<65).map { index in
                    (key: "storm-\(tick)-\(index)", at: due, payload: Int64(due.timeIntervalSince1970 * 1e9))
                }
                written += try await writer.schedule(batch, handler: "bench")
                tick += 1
                try await Task.sleep(until: begin + .milliseconds(100 * tick))
            }
            try await Task.sleep(for: .seconds(5))
            let lines = logLines(log)
            let loads = lines.dropFirst(0).filter { $0.hasPrefix("load ") }.dropFirst(startLoads).map { $0.split(separator: " ") }
            let minutes = Double(seconds) / 60 * 2  // instance-minutes: per instance and minute
            let horizonLoads = Double(loads.count { $0[2] == "horizon" }) / minutes
            let windowLoads = Double(loads.count { $0[2] == "window" }) / minutes
            let windowTimers = Double(loads.filter { $0[2] == "window" }.reduce(0) { $0 + (Int($1[3]) ?? 0) }) / minutes
            let lags = lines.compactMap { line -> Double? in
                let fields = line.split(separator: " ")
                guard fields.count >= 3, fields[0] == "fire", let lag = Double(fields[2]) else { return nil }
                return lag * 1000
            }.sorted()
            rows.append((horizonLoads, windowLoads, windowTimers, lags.isEmpty ? 0 : lags[lags.count * 99 / 100], lags.count, written))
            print(
                String(
                    format: "  per instance and minute: %.1f horizon loads, %.0f window loads reading %.0f timers; %d of %d fired, lag p99 %.1f ms",
                    horizonLoads, windowLoads, windowTimers, lags.count, written, rows.last!.lagP99))
        }
        print("\n| held | horizon loads/min/instance | window loads/min/instance | timers read by windows/min/instance | fired of written | lag p99 ms |")
        print("|--:|--:|--:|--:|--:|--:|")
        print(
            "| \(held) | \(spreadCell(rows.map(\.horizon), "%.1f")) | \(spreadCell(rows.map(\.windows), "%.0f")) | \(spreadCell(rows.map(\.windowTimers), "%.0f")) | "
                + "\(rows.map { "\($0.fired)/\($0.written)" }.joined(separator: ", ")) | \(spreadCell(rows.map(\.lagP99), "%.1f")) |")
        print("\nload average at the end: \(loadAverage()) (2 cores)")
    }
}

/// A backlog after downtime: `count` one-shots already overdue when one instance starts; it
/// sweeps them (the next ready rows, as many as it has free handler slots, at most its catch-up
/// rate a second if it has one). Reported: the time to drain, the fire rate, and the instance's resident set —
/// its peak, and at each quarter of the drain.
struct Backlog: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One instance drains a backlog of overdue timers; its memory as it goes.")

    @Option(help: "The server; TIMERKIT_POSTGRES_URL by default.") var url: String?
    @Option(help: "Overdue timers, one run each.") var counts: [Int] = [100_000, 1_000_000]
    @Option(help: "The instance's catch-up rate; the library's default (no cap) when absent.") var catchUpRate: Int?
    @Option(help: "The instance's handler slots; the library's default when absent.") var slots: Int?

    var arguments: [String] { (catchUpRate.map { ["--catch-up-rate", String($0)] } ?? []) + (slots.map { ["--slots", String($0)] } ?? []) }

    func run() async throws {
        guard let url = url ?? ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], let configuration = PostgresURL.configuration(url) else {
            throw ValidationError("no server: pass --url or run through Scripts/with-postgres")
        }
        print(
            "timerkit-fleet-bench backlog: \(counts.map(String.init).joined(separator: ", ")) overdue timers, one instance (\(arguments.isEmpty ? "default options" : arguments.joined(separator: " ")))"
        )
        var table: [String] = []
        for count in counts {
            let namespace = "backlog-\(UUID().uuidString.prefix(8))"
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(namespace).log").path
            defer { try? FileManager.default.removeItem(atPath: log) }
            let due = Date().addingTimeInterval(1)
            try await scheduleAll((0..<count).map { (key: "b\($0)", at: due, payload: 0) }, configuration: configuration, namespace: namespace)
            try await analyze(configuration)
            while Date() < due.addingTimeInterval(1) { try await Task.sleep(for: .milliseconds(100)) }
            let begin = Date()
            let processes = try await launchInstances(1, url: url, namespace: namespace, log: log, arguments: arguments)
            defer { stopInstances(processes) }
            var fired = 0
            var quarters: [Int] = []
            var peak = 0
            while fired < count, Date().timeIntervalSince(begin) < 1_800 {
                try await Task.sleep(for: .seconds(1))
                let lines = logLines(log)
                fired = lines.count { $0.hasPrefix("fire ") }
                let rss = lines.filter { $0.hasPrefix("rss ") }.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
                peak = rss.max() ?? 0
                while quarters.count < 4, fired >= count * (quarters.count + 1) / 4 { quarters.append(rss.last ?? 0) }
            }
            let seconds = Date().timeIntervalSince(begin)
            let line = String(
                format: "| %d | %.0f | %.0f | %.0f | %@ |", count, seconds, Double(fired) / seconds, Double(peak) / 1024,
                quarters.map { String(format: "%.0f", Double($0) / 1024) }.joined(separator: " / "))
            print("  " + line + " \(fired) fired")
            table.append(line)
        }
        print("\n| overdue | seconds to drain | fires/s | peak RSS MiB | RSS MiB at ¼ / ½ / ¾ / all drained |")
        print("|--:|--:|--:|--:|--:|")
        for line in table { print(line) }
        print("\nload average at the end: \(loadAverage()) (2 cores)")
    }
}

/// `ANALYZE timerkit_timers`, as autovacuum does after a bulk load.
func analyze(_ configuration: PostgresClient.Configuration) async throws {
    let client = PostgresClient(configuration: configuration)
    let running = Task { await client.run() }
    defer { running.cancel() }
    try await client.query("ANALYZE timerkit_timers")
}
