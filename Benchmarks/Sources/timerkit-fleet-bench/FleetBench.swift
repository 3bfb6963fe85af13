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
        subcommands: [Run.self, Instance.self], defaultSubcommand: Run.self)
}

struct Instance: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One instance of the fleet (started by `run`).")

    @Argument var url: String
    @Argument var namespace: String
    @Argument var log: String
    @Option var mode: String = "armed"

    func run() async throws {
        guard let configuration = PostgresURL.configuration(url) else { throw ValidationError("not a PostgreSQL URL: \(url)") }
        let descriptor = open(log, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        var options = DurableTimers.Options()
        options.lease = .seconds(5)
        options.maxConcurrentHandlers = 64
        options.catchUpRate = 100_000
        options.onError = { error in FileHandle.standardError.write(Data("instance: \(error)\n".utf8)) }
        let timers = try await DurableTimers(postgres: configuration, namespace: namespace, options: options)
        try await timers.register("bench", payload: Int64.self) { due, fire in
            append("fire \(fire.firedAt.timeIntervalSince1970) \(Double(fire.firedAt.timeIntervalSince1970) - Double(due) / 1e9)", to: descriptor)
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
            process.arguments = ["instance", url, namespace, log, "--mode", mode]
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
                guard fields.count == 3, fields[0] == "fire", let at = Double(fields[1]), let lag = Double(fields[2]) else { return nil }
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
