// Issue 31: the fleet's throughput and its cost to the database, beside pgqueuer (a PostgreSQL job
// queue on PyPI: LISTEN/NOTIFY plus polling) in the same rounds, on the same server.
//
//   Scripts/with-postgres .build-bench-release/release/timerkit-fleet-bench throughput
//
// Two scenarios, each run in a database of its own made for the run:
// - offered R/s: timers scheduled one by one (one call each, from 32 concurrent callers of this
//   process, as an application's requests would), R a second for `seconds`, each due 2 s after it
//   is scheduled; the instances fire them.
// - burn-down N: N timers already overdue when the instances start (TimerKit's written due 2 s back,
//   pgqueuer's due at their insertion; both then wait 1.2 s).
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
        abstract: "Offered rates scheduled one by one, and burn-downs of overdue timers: TimerKit's fleet beside pgqueuer, with the server's CPU per fire.")

    @Option(help: "The server; TIMERKIT_POSTGRES_URL by default.") var url: String?
    @Option(help: "Rounds; each runs every configuration once, interleaved.") var rounds = 3
    @Option(help: "Offered rates, timers a second.") var rates: [Int] = [500, 2_000, 5_000]
    @Option(help: "Seconds each offered rate is scheduled for.") var seconds = 10
    @Option(help: "Overdue timers of the burn-downs.") var burndowns: [Int] = [20_000]
    @Option(help: "Instance counts.") var instances: [Int] = [1, 2]
    @Option(help: "Systems: timerkit, pgqueuer (its defaults), pgqueuer-tuned.") var systems: [String] = ["timerkit", "pgqueuer", "pgqueuer-tuned"]
    @Option(help: "The Python of a virtual environment with pgqueuer (made in .build-bench-venv when absent).") var python: String?
    @Option(help: "TimerKit instances' catch-up rate (overdue timers claimed a second).") var catchUpRate = 100_000
    @Flag(help: "ANALYZE the table after writing a burn-down's timers (as autovacuum would, later).") var analyze = false

    struct Sample {
        /// Offered: the rate the timers were scheduled at (what the scheduler achieved).
        var scheduledPerSecond: Double?
        var firesPerSecond: Double
        var lag: (p50: Double, p99: Double, max: Double)
        var fired: Int
        var expected: Int
        var serverMicros: Double
        var instanceMicros: Double
        var statements: Double
        var attemptsPerClaim: Double?
        var profile: [String]
    }

    func run() async throws {
        guard let url = url ?? ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], let configuration = PostgresURL.configuration(url) else {
            throw ValidationError("no server: pass --url or run through Scripts/with-postgres")
        }
        let python = systems.contains(where: { $0.hasPrefix("pgqueuer") }) ? try preparePython() : ""
        let admin = PostgresClient(configuration: configuration)
        let adminRun = Task { await admin.run() }
        defer { adminRun.cancel() }
        try await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        let scenarios = rates.map { Scenario.offered($0) } + burndowns.map { Scenario.burndown($0) }
        say(
            "timerkit-fleet-bench throughput: \(rounds) rounds; offered \(rates.map(String.init).joined(separator: ", "))/s for \(seconds) s, "
                + "burn-downs of \(burndowns.map(String.init).joined(separator: ", ")); instances \(instances.map(String.init).joined(separator: ", ")); "
                + "TimerKit catch-up rate \(catchUpRate)/s\(analyze ? ", ANALYZE after bulk writes" : ", no ANALYZE"); load at start \(loadAverage())")
        var results: [String: [Sample]] = [:]
        var order: [String] = []
        for round in 1...rounds {
            for scenario in scenarios {
                for system in systems {
                    for count in instances {
                        let name = "\(scenario.name) | \(system) | \(count)"
                        if !order.contains(name) { order.append(name) }
                        let sample = try await measure(scenario, system: system, instances: count, url: url, admin: admin, python: python)
                        results[name, default: []].append(sample)
                        say(
                            String(
                                format:
                                    "  round %d %@: %@%.0f fires/s, lag p50 %.1f p99 %.1f max %.0f ms, server %.0f µs/fire, instances %.0f µs/fire, %.2f statements/fire%@, %d/%d fired; load %@",
                                round, name, sample.scheduledPerSecond.map { String(format: "scheduled %.0f/s, ", $0) } ?? "", sample.firesPerSecond,
                                sample.lag.p50, sample.lag.p99, sample.lag.max, sample.serverMicros, sample.instanceMicros,
                                sample.statements, sample.attemptsPerClaim.map { String(format: ", %.2f claim attempts/claim", $0) } ?? "", sample.fired,
                                sample.expected, loadAverage()))
                    }
                }
            }
        }
        say(
            "\n| scenario | system | instances | scheduled/s | fires/s | lag p50 ms | lag p99 ms | lag max ms | server CPU µs/fire | instances' CPU µs/fire | statements/fire | claim attempts/claim | fired |"
        )
        say("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for name in order {
            let samples = results[name] ?? []
            let attempts = samples.compactMap(\.attemptsPerClaim)
            say(
                "| \(name) | \(spreadCell(samples.compactMap(\.scheduledPerSecond), "%.0f")) | \(spreadCell(samples.map(\.firesPerSecond), "%.0f")) | \(spreadCell(samples.map(\.lag.p50), "%.1f")) | "
                    + "\(spreadCell(samples.map(\.lag.p99), "%.1f")) | \(spreadCell(samples.map(\.lag.max), "%.0f")) | \(spreadCell(samples.map(\.serverMicros), "%.0f")) | "
                    + "\(spreadCell(samples.map(\.instanceMicros), "%.0f")) | \(spreadCell(samples.map(\.statements), "%.2f")) | "
                    + "\(attempts.isEmpty ? "–" : spreadCell(attempts, "%.2f")) | \(samples.map { "\($0.fired)/\($0.expected)" }.joined(separator: ", ")) |")
        }
        say("\nWhere the server's time went (last round; pg_stat_statements: total execution ms, calls, statement):")
        for name in order {
            say("\n\(name):")
            for line in results[name]?.last?.profile ?? [] { say("    \(line)") }
        }
        say("\nload average at the end: \(loadAverage()) (2 cores)")
    }

    enum Scenario {
        case offered(Int)
        case burndown(Int)

        var name: String {
            switch self {
            case .offered(let rate): "offered \(rate)/s"
            case .burndown(let count): "burn-down \(count)"
            }
        }
    }

    /// One run: a database made for it, the instances, the timers, the readings; then it is dropped.
    func measure(_ scenario: Scenario, system: String, instances count: Int, url: String, admin: PostgresClient, python: String) async throws -> Sample {
        let database = "bench_\(UUID().uuidString.prefix(8).lowercased())"
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"))
        defer {
            Task { try? await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(database) WITH (FORCE)")) }
        }
        let databaseURL = url.replacingOccurrences(of: #"/[^/?]*(\?|$)"#, with: "/\(database)$1", options: .regularExpression)
        guard let configuration = PostgresURL.configuration(databaseURL) else { throw ValidationError("not a PostgreSQL URL: \(databaseURL)") }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(database).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let namespace = "bench"
        let isTimerKit = system == "timerkit"
        let script = Self.pgqueuerScript
        // Each system's schema is in place before anything is measured.
        var scheduler: DurableTimers?
        if isTimerKit {
            let timers = try await DurableTimers(postgres: configuration, namespace: namespace)
            try await timers.register("bench", payload: Int64.self) { _, _ in }
            scheduler = timers
        } else {
            try runToEnd(python, [script, "setup", databaseURL])
        }
        var expected = 0
        if case .burndown(let overdue) = scenario {
            expected = overdue
            if let scheduler {
                // Overdue by more than the second a load still arms key by key: a backlog.
                let due = Date().addingTimeInterval(-2)
                for chunk in stride(from: 0, to: overdue, by: 5_000) {
                    let batch = (chunk..<min(chunk + 5_000, overdue)).map { (key: "b\($0)", at: due, payload: Int64(due.timeIntervalSince1970 * 1e9)) }
                    _ = try await scheduler.schedule(batch, handler: "bench")
                }
            } else {
                try runToEnd(python, [script, "overdue", databaseURL, "--count", String(overdue)])
            }
            if analyze { try await admin.query(PostgresQuery(unsafeSQL: "ANALYZE")) }
            try await Task.sleep(for: .milliseconds(1_200))
        }
        let statementsBefore = try await statementCount(admin, database: database)
        let serverBefore = serverCPUTicks()
        var processes: [Process] = []
        defer { stopInstances(processes) }
        if isTimerKit {
            processes = try await launchInstances(count, url: databaseURL, namespace: namespace, log: log, arguments: ["--catch-up-rate", String(catchUpRate)])
        } else {
            for _ in 0..<count {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: python)
                process.arguments = [script, "worker", databaseURL, log] + (system == "pgqueuer-tuned" ? ["--tuned"] : [])
                try process.run()
                processes.append(process)
            }
            while logLines(log).count(where: { $0 == "ready" }) < count { try await Task.sleep(for: .milliseconds(20)) }
        }
        let began = Date().timeIntervalSince1970
        var scheduledPerSecond: Double?
        if case .offered(let rate) = scenario {
            expected = rate * seconds
            let start = ContinuousClock.now
            if let scheduler {
                try await offer(rate: rate, through: scheduler)
            } else {
                try runToEnd(python, [script, "offered", databaseURL, "--rate", String(rate), "--seconds", String(seconds), "--delay", "2"])
            }
            let elapsed = ContinuousClock.now - start
            scheduledPerSecond = Double(expected) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        // Until every timer fired, or nothing fired for 10 s.
        var fires: [(at: Double, lag: Double)] = []
        var lastProgress = ContinuousClock.now
        while fires.count < expected, ContinuousClock.now - lastProgress < .seconds(10) {
            try await Task.sleep(for: .milliseconds(200))
            let now = Self.fires(logLines(log))
            if now.count > fires.count { lastProgress = .now }
            fires = now
        }
        let serverTicks = serverCPUTicks() - serverBefore
        let instanceTicks = processes.reduce(0) { $0 + processCPUTicks($1.processIdentifier) }
        let statements = try await statementCount(admin, database: database) - statementsBefore
        let profile = try await statementProfile(admin, database: database)
        let lines = logLines(log)
        let claims = lines.compactMap { line -> (Int, Int)? in
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "claim", let requested = Int(fields[2]), let claimed = Int(fields[3]) else { return nil }
            return (requested, claimed)
        }
        let claimed = claims.reduce(0) { $0 + $1.1 }
        await scheduler?.shutdown()
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let lags = fires.map { $0.lag * 1000 }.sorted()
        let firsts = fires.map(\.at)
        // Offered: over the time from the first timer's due time; a burn-down: over its fires.
        let start = if case .offered = scenario { began + 2 } else { firsts.min() ?? began }
        let fired = max(fires.count, 1)
        return Sample(
            scheduledPerSecond: scheduledPerSecond,
            firesPerSecond: Double(fires.count) / max((firsts.max() ?? start) - start, 0.001),
            lag: (lags.isEmpty ? 0 : lags[lags.count / 2], lags.isEmpty ? 0 : lags[min(lags.count - 1, lags.count * 99 / 100)], lags.last ?? 0),
            fired: fires.count, expected: expected,
            serverMicros: Double(serverTicks) / ticks * 1e6 / Double(fired), instanceMicros: Double(instanceTicks) / ticks * 1e6 / Double(fired),
            statements: Double(statements) / Double(fired),
            attemptsPerClaim: isTimerKit && claimed > 0 ? Double(claims.reduce(0) { $0 + $1.0 }) / Double(claimed) : nil, profile: profile)
    }

    /// Schedules `rate` timers a second for ``seconds``, one call each, each due 2 s later: 32
    /// callers take the next timer when its moment comes (an application's concurrent requests).
    func offer(rate: Int, through scheduler: DurableTimers) async throws {
        let total = rate * seconds
        let next = Ticket()
        let begin = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    while true {
                        let index = await next.take()
                        guard index < total else { return }
                        try await Task.sleep(until: begin + .nanoseconds(Int64(index) * 1_000_000_000 / Int64(rate)))
                        let due = Date().addingTimeInterval(2)
                        try await scheduler.schedule(key: "o\(index)", at: due, handler: "bench", payload: Int64(due.timeIntervalSince1970 * 1e9))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func fires(_ lines: [Substring]) -> [(at: Double, lag: Double)] {
        lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, fields[0] == "fire", let at = Double(fields[1]), let lag = Double(fields[2]) else { return nil }
            return (at, lag)
        }
    }

    /// The pgqueuer script, beside this package's sources.
    static var pgqueuerScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("peers/pgqueuer/bench.py").path
    }

    /// The Python to run pgqueuer with: `--python`, or a virtual environment made (once) in
    /// `.build-bench-venv` from the script's requirements.
    func preparePython() throws -> String {
        if let python { return python }
        let peers = URL(fileURLWithPath: Self.pgqueuerScript).deletingLastPathComponent()
        let venv = peers.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build-bench-venv").path
        let python = venv + "/bin/python3"
        if !FileManager.default.fileExists(atPath: python) {
            try runToEnd("/usr/bin/env", ["python3", "-m", "venv", venv])
            try runToEnd(python, ["-m", "pip", "install", "-q", "-r", peers.appendingPathComponent("requirements.txt").path])
        }
        return python
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
