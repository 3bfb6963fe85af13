// The fleet's throughput and its cost to the database, beside pgqueuer (a PostgreSQL job queue on
// PyPI: LISTEN/NOTIFY plus polling) in the same rounds, on the same server.
//
//   Scripts/with-postgres .build-bench-release/release/timerkit-fleet-bench throughput
//
// Two scenarios, each run in a database of its own made for the run (Fleet.swift):
// - offered R/s: R timers a second for `seconds`, written in batches every 20 ms (or one call per
//   timer from 32 concurrent callers, `--batch-every-ms 0`), each due 2 s after its write; the
//   instances fire them.
// - burn-down N: N timers already overdue when the instances start (TimerKit's written due 2 s back,
//   pgqueuer's due at their insertion; both then wait 1.2 s).
// TimerKit's instances run on the library's default options unless `--slots` or
// `--catch-up-rate` say otherwise; pgqueuer's on its defaults (`pgqueuer`) or tuned.
// Reported per system and instance count, as medians (min–max) of the rounds: fires/s, lag
// p50/p99/max (start of the handler − due time, on each host's wall clock: one machine), the
// server's CPU per fire (every `postgres` process, exited backends included through the
// postmaster's children times, from /proc), the instances' CPU per fire, statements per fire
// (pg_stat_statements; the server needs `shared_preload_libraries = 'pg_stat_statements'`, which
// Scripts/with-postgres sets), and TimerKit's claim attempts per claim. Then, for the last round
// of each configuration, the statements that took the server's time.
import ArgumentParser
import Foundation
import PostgresNIO
import TimerKit
import TimerKitDurable
import TimerKitPostgres

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Throughput: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Offered rates and burn-downs of overdue timers: TimerKit's fleet beside pgqueuer, with the server's CPU per fire.")

    @OptionGroup var fleet: FleetSettings
    @Option(help: "Rounds; each runs every configuration once, interleaved.") var rounds = 3
    @Option(help: "Offered rates, timers a second.") var rates: [Int] = [500, 2_000, 5_000]
    @Option(help: "Seconds each offered rate is written for.") var seconds = 10.0
    @Option(help: "Overdue timers of the burn-downs.") var burndowns: [Int] = [20_000]
    @Option(help: "Instance counts.") var instances: [Int] = [1, 2]
    @Option(help: "Systems: timerkit, pgqueuer (its defaults), pgqueuer-tuned.") var systems: [String] = ["timerkit", "pgqueuer", "pgqueuer-tuned"]
    @Flag(help: "ANALYZE the table after writing a burn-down's timers (as autovacuum would, later).") var analyze = false

    func run() async throws {
        let scenarios = rates.map { Scenario.offered([Phase(rate: $0, seconds: seconds)]) } + burndowns.map { Scenario.burndown($0) }
        say(
            "timerkit-fleet-bench throughput: \(rounds) rounds; offered \(rates.map(String.init).joined(separator: ", "))/s for \(String(format: "%g", seconds)) s "
                + "(\(fleet.describedLoad)), burn-downs of \(burndowns.map(String.init).joined(separator: ", ")); instances "
                + "\(instances.map(String.init).joined(separator: ", ")); \(fleet.describedOptions)\(analyze ? ", ANALYZE after bulk writes" : ", no ANALYZE"); "
                + "load at start \(loadAverage())")
        var results: [String: [Sample]] = [:]
        var order: [String] = []
        try await fleet.withFleet(systems: systems) { fleet in
            for round in 1...rounds {
                for scenario in scenarios {
                    for system in systems {
                        for count in instances {
                            let name = "\(scenario.name) | \(system) | \(count)"
                            if !order.contains(name) { order.append(name) }
                            let sample = try await fleet.measure(scenario, system: system, instances: count, analyze: analyze)
                            results[name, default: []].append(sample)
                            say("  round \(round) \(name): \(sample.summary); load \(loadAverage())")
                        }
                    }
                }
            }
        }
        say(
            "\n| scenario | system | instances | scheduled/s | fires/s | lag p50 ms | lag p99 ms | lag max ms | server CPU µs/fire | instances' CPU µs/fire | statements/fire | claim attempts/claim | fired | duplicates |"
        )
        say("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for name in order {
            let samples = results[name] ?? []
            let attempts = samples.compactMap(\.attemptsPerClaim)
            say(
                "| \(name) | \(spreadCell(samples.compactMap(\.scheduledPerSecond), "%.0f")) | \(spreadCell(samples.map(\.firesPerSecond), "%.0f")) | \(spreadCell(samples.map(\.lag.p50), "%.1f")) | "
                    + "\(spreadCell(samples.map(\.lag.p99), "%.1f")) | \(spreadCell(samples.map(\.lag.max), "%.0f")) | \(spreadCell(samples.map(\.serverMicros), "%.0f")) | "
                    + "\(spreadCell(samples.map(\.instanceMicros), "%.0f")) | \(spreadCell(samples.map(\.statements), "%.2f")) | "
                    + "\(attempts.isEmpty ? "–" : spreadCell(attempts, "%.2f")) | \(samples.map { "\($0.fired)/\($0.expected)" }.joined(separator: ", ")) | "
                    + "\(samples.map { String($0.duplicates) }.joined(separator: ", ")) |")
        }
        say("\nWhere the server's time went (last round; pg_stat_statements: total execution ms, calls, statement):")
        for name in order {
            say("\n\(name):")
            for line in results[name]?.last?.profile ?? [] { say("    \(line)") }
        }
        say("\nload average at the end: \(loadAverage()) (2 cores)")
    }
}

/// Prints a line at once (standard output to a file is buffered, and a run takes minutes).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Hands out 0, 1, 2, … to concurrent callers.
actor Ticket {
    private var next = 0

    func take() -> Int {
        defer { next += 1 }
        return next
    }
}

/// Runs a program to its end; throws if it fails.
func runToEnd(_ executable: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw ValidationError("\(executable) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
    }
}

/// utime + stime of a process, in clock ticks (0 when it is gone).
func processCPUTicks(_ pid: Int32) -> Int {
    cpuFields(pid).map { $0.utime + $0.stime } ?? 0
}

/// utime, stime, cutime, cstime of /proc/PID/stat, and the command's name.
func cpuFields(_ pid: Int32) -> (command: String, parent: Int32, utime: Int, stime: Int, cutime: Int, cstime: Int)? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
    else { return nil }
    let command = String(stat[stat.index(after: open)..<close])
    // After the name: state, ppid, …; utime is field 14 of the line, so the 12th after the name.
    let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
    guard fields.count > 15, let parent = Int32(fields[1]), let utime = Int(fields[11]), let stime = Int(fields[12]), let cutime = Int(fields[13]),
        let cstime = Int(fields[14])
    else { return nil }
    return (command, parent, utime, stime, cutime, cstime)
}

/// The CPU time of every PostgreSQL server process, in clock ticks: each live process's own, plus
/// what each postmaster's exited children (backends of closed connections) used.
func serverCPUTicks() -> Int {
    let pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init)
    let processes = pids.compactMap { pid in cpuFields(pid).map { (pid, $0) } }.filter { $0.1.command == "postgres" }
    let servers = Set(processes.map(\.0))
    return processes.reduce(0) { total, entry in
        let (_, fields) = entry
        // A postmaster (whose parent is not a server process) also counts its exited children.
        let postmaster = !servers.contains(fields.parent)
        return total + fields.utime + fields.stime + (postmaster ? fields.cutime + fields.cstime : 0)
    }
}

/// Statements the database has run, by pg_stat_statements.
func statementCount(_ admin: PostgresClient, database: String) async throws -> Int {
    var count = 0
    let rows = try await admin.query(
        "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = \(database))")
    for try await value in rows.decode(Int64.self) { count = Int(value) }
    return count
}

/// The statements that took most of the database's time: total ms, calls, the text's start.
func statementProfile(_ admin: PostgresClient, database: String) async throws -> [String] {
    var lines: [String] = []
    let rows = try await admin.query(
        """
        SELECT total_exec_time, calls, regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = \(database)) ORDER BY total_exec_time DESC LIMIT 6
        """)
    for try await (total, calls, query) in rows.decode((Double, Int64, String).self) {
        lines.append(String(format: "%8.0f ms %8d× %@", total, calls, String(query.prefix(150))))
    }
    return lines
}
