// One measured run of a fleet, shared by `throughput` and `ceiling`: a database made for the run,
// the instances (TimerKit's or pgqueuer's workers), an offered load or a backlog, the fires read
// back from the instances' log, and the server's cost. Then the database is dropped.
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

/// The settings every fleet run shares: the server, the peer's Python, and how the instances and
/// the offered load are set up. TimerKit's instances run on the library's default options unless
/// an option here says otherwise.
struct FleetSettings: ParsableArguments {
    @Option(help: "The server; TIMERKIT_POSTGRES_URL by default.") var url: String?
    @Option(help: "The Python of a virtual environment with pgqueuer (made in .build-bench-venv when absent).") var python: String?
    @Option(help: "TimerKit instances' catch-up rate (overdue timers claimed a second); the library's default when absent.")
    var catchUpRate: Int?
    @Option(help: "TimerKit instances' handler slots (maxConcurrentHandlers); the library's default when absent.") var slots: Int?
    @Option(help: "Milliseconds between the offered load's batches (each a write of the timers whose moment came); 0 writes one at a time.")
    var batchEveryMs = 20
    @Option(help: "Seconds from a timer's write to its due time.") var delay = 2.0

    /// The instance options that differ from the library's defaults.
    var instanceArguments: [String] {
        (catchUpRate.map { ["--catch-up-rate", String($0)] } ?? []) + (slots.map { ["--slots", String($0)] } ?? [])
    }

    /// What the instances run on, as the report's header says it.
    var describedOptions: String {
        let changed = [catchUpRate.map { "catch-up rate \($0)/s" }, slots.map { "\($0) handler slots" }].compactMap { $0 }
        return changed.isEmpty ? "TimerKit on default options" : "TimerKit with " + changed.joined(separator: ", ")
    }

    /// What the offered load writes, as the report's header says it.
    var describedLoad: String {
        let batches = batchEveryMs > 0 ? "in batches every \(batchEveryMs) ms" : "one at a time"
        return "timers written \(batches), each due \(String(format: "%g", delay)) s after its write"
    }
}

/// A stretch of an offered load: `rate` timers a second for `seconds`.
struct Phase: Hashable {
    var rate: Int
    var seconds: Double

    var count: Int { Int((Double(rate) * seconds).rounded()) }
}

/// What a run does: an offered load (one or more phases back to back), or a backlog of overdue
/// timers the instances find when they start.
enum Scenario {
    case offered([Phase])
    case burndown(Int)

    var name: String {
        switch self {
        case .offered(let phases): phases.map { "offered \($0.rate)/s" }.joined(separator: " then ")
        case .burndown(let count): "burn-down \(count)"
        }
    }
}

/// One fire, read from the instances' log: when its handler started (unix seconds), its lag, and
/// what fired (a TimerKit key, a pgqueuer job's id).
struct Fire {
    var at: Double
    var lag: Double
    var id: Substring
}

/// One run's readings.
struct Sample {
    /// Offered: the rate the timers were written at (what the writer achieved).
    var scheduledPerSecond: Double?
    var firesPerSecond: Double
    var lag: (p50: Double, p99: Double, max: Double)
    var fired: Int
    var expected: Int
    /// The fires of a timer (a job) that had fired already.
    var duplicates: Int
    var serverMicros: Double
    var instanceMicros: Double
    var statements: Double
    var attemptsPerClaim: Double?
    var profile: [String]
    /// When the first timer was due (unix seconds), and every fire.
    var start: Double
    var fires: [Fire]

    /// Every timer fired once, and 99 % within `bound` milliseconds of its due time.
    func keptUp(within bound: Double) -> Bool { fired == expected && duplicates == 0 && lag.p99 <= bound }

    var summary: String {
        String(
            format:
                "%@%.0f fires/s, lag p50 %.1f p99 %.1f max %.0f ms, server %.0f µs/fire, instances %.0f µs/fire, %.2f statements/fire%@, %d/%d fired, %d duplicates",
            scheduledPerSecond.map { String(format: "scheduled %.0f/s, ", $0) } ?? "", firesPerSecond, lag.p50, lag.p99, lag.max, serverMicros,
            instanceMicros, statements, attemptsPerClaim.map { String(format: ", %.2f claim attempts/claim", $0) } ?? "", fired, expected, duplicates)
    }
}

/// Runs fleets on one server: the admin connection, and pgqueuer's Python when a run needs it.
struct Fleet {
    let settings: FleetSettings
    let url: String
    let admin: PostgresClient
    let python: String

    /// One run: a database made for it, the instances, the timers, the readings; then it is dropped.
    func measure(_ scenario: Scenario, system: String, instances count: Int, analyze: Bool = false) async throws -> Sample {
        let database = "bench_\(UUID().uuidString.prefix(8).lowercased())"
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"))
        defer {
            Task { [admin] in try? await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(database) WITH (FORCE)")) }
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
            processes = try await launchInstances(count, url: databaseURL, namespace: namespace, log: log, arguments: settings.instanceArguments)
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
        if case .offered(let phases) = scenario {
            expected = phases.reduce(0) { $0 + $1.count }
            let start = ContinuousClock.now
            if let scheduler {
                try await offer(phases, through: scheduler)
            } else {
                var arguments = [
                    script, "offered", databaseURL, "--delay", String(settings.delay), "--batch-every", String(Double(settings.batchEveryMs) / 1000)
                ]
                for phase in phases { arguments += ["--rate", String(phase.rate), "--seconds", String(phase.seconds)] }
                try runToEnd(python, arguments)
            }
            let elapsed = ContinuousClock.now - start
            scheduledPerSecond = Double(expected) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        // Until every timer fired, or nothing fired for 10 s.
        var fires: [Fire] = []
        var lastProgress = ContinuousClock.now
        while fires.count < expected, ContinuousClock.now - lastProgress < .seconds(10) {
            try await Task.sleep(for: .milliseconds(200))
            let now = Self.fires(logLines(log))
            if now.count > fires.count { lastProgress = .now }
            fires = now
        }
        // A moment more, so that a timer fired twice shows.
        try await Task.sleep(for: .milliseconds(500))
        let lines = logLines(log)
        fires = Self.fires(lines)
        let serverTicks = serverCPUTicks() - serverBefore
        let instanceTicks = processes.reduce(0) { $0 + processCPUTicks($1.processIdentifier) }
        let statements = try await statementCount(admin, database: database) - statementsBefore
        let profile = try await statementProfile(admin, database: database)
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
        let start = if case .offered = scenario { began + settings.delay } else { firsts.min() ?? began }
        let fired = max(fires.count, 1)
        let distinct = Set(fires.map(\.id)).count
        return Sample(
            scheduledPerSecond: scheduledPerSecond,
            firesPerSecond: Double(fires.count) / max((firsts.max() ?? start) - start, 0.001),
            lag: (lags.isEmpty ? 0 : lags[lags.count / 2], lags.isEmpty ? 0 : lags[min(lags.count - 1, lags.count * 99 / 100)], lags.last ?? 0),
            fired: distinct, expected: expected, duplicates: fires.count - distinct,
            serverMicros: Double(serverTicks) / ticks * 1e6 / Double(fired), instanceMicros: Double(instanceTicks) / ticks * 1e6 / Double(fired),
            statements: Double(statements) / Double(fired),
            attemptsPerClaim: isTimerKit && claimed > 0 ? Double(claims.reduce(0) { $0 + $1.0 }) / Double(claimed) : nil, profile: profile,
            start: start, fires: fires)
    }

    /// Writes the phases' timers, each due ``FleetSettings/delay`` after its write: in batches every
    /// ``FleetSettings/batchEveryMs`` (each holding the timers whose moment has come, so the count
    /// written by any instant follows the rate, at most 32 batches in flight), or one call per
    /// timer from 32 concurrent callers (an application's requests).
    func offer(_ phases: [Phase], through scheduler: DurableTimers) async throws {
        // The moment of timer i, in seconds from the start.
        let moments = phases.indices.flatMap { index in
            let offset = phases[..<index].reduce(0) { $0 + $1.seconds }
            return (0..<phases[index].count).map { offset + Double($0) / Double(phases[index].rate) }
        }
        let total = moments.count
        let begin = ContinuousClock.now
        let delay = settings.delay
        let write: @Sendable (Range<Int>) async throws -> Void = { range in
            let due = Date().addingTimeInterval(delay)
            let payload = Int64(due.timeIntervalSince1970 * 1e9)
            if range.count == 1 {
                try await scheduler.schedule(key: "o\(range.lowerBound)", at: due, handler: "bench", payload: payload)
            } else {
                _ = try await scheduler.schedule(range.map { (key: "o\($0)", at: due, payload: payload) }, handler: "bench")
            }
        }
        guard settings.batchEveryMs > 0 else {
            let next = Ticket()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<32 {
                    group.addTask {
                        while true {
                            let index = await next.take()
                            guard index < total else { return }
                            try await Task.sleep(until: begin + .seconds(moments[index]))
                            try await write(index..<(index + 1))
                        }
                    }
                }
                try await group.waitForAll()
            }
            return
        }
        let every = Duration.milliseconds(settings.batchEveryMs)
        try await withThrowingTaskGroup(of: Void.self) { group in
            var sent = 0
            var tick = 1
            var inFlight = 0
            while sent < total {
                try await Task.sleep(until: begin + every * tick)
                tick += 1
                let elapsed = (ContinuousClock.now - begin) / .seconds(1)
                var upTo = sent
                while upTo < total, moments[upTo] <= elapsed { upTo += 1 }
                guard upTo > sent else { continue }
                if inFlight == 32 {
                    try await group.next()
                    inFlight -= 1
                }
                let range = sent..<upTo
                sent = upTo
                inFlight += 1
                group.addTask { try await write(range) }
            }
            try await group.waitForAll()
        }
    }

    /// The fires in the instances' log lines.
    static func fires(_ lines: [Substring]) -> [Fire] {
        lines.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "fire", let at = Double(fields[1]), let lag = Double(fields[2]) else { return nil }
            return Fire(at: at, lag: lag, id: fields[3])
        }
    }

    /// The pgqueuer script, beside this package's sources.
    static var pgqueuerScript: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("peers/pgqueuer/bench.py").path
    }
}

extension FleetSettings {
    /// The server's URL: ``url`` or `TIMERKIT_POSTGRES_URL`.
    func serverURL() throws -> (String, PostgresClient.Configuration) {
        guard let url = url ?? ProcessInfo.processInfo.environment["TIMERKIT_POSTGRES_URL"], let configuration = PostgresURL.configuration(url) else {
            throw ValidationError("no server: pass --url or run through Scripts/with-postgres")
        }
        return (url, configuration)
    }

    /// The Python to run pgqueuer with: `--python`, or a virtual environment made (once) in
    /// `.build-bench-venv` from the script's requirements.
    func preparePython() throws -> String {
        if let python { return python }
        let peers = URL(fileURLWithPath: Fleet.pgqueuerScript).deletingLastPathComponent()
        let venv = peers.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build-bench-venv").path
        let python = venv + "/bin/python3"
        if !FileManager.default.fileExists(atPath: python) {
            try runToEnd("/usr/bin/env", ["python3", "-m", "venv", venv])
            try runToEnd(python, ["-m", "pip", "install", "-q", "-r", peers.appendingPathComponent("requirements.txt").path])
        }
        return python
    }

    /// Runs `body` with a fleet on the server: its admin connection (pg_stat_statements made
    /// available), and pgqueuer's Python if `systems` name it.
    func withFleet<T>(systems: [String], _ body: (Fleet) async throws -> T) async throws -> T {
        let (url, configuration) = try serverURL()
        let python = systems.contains(where: { $0.hasPrefix("pgqueuer") }) ? try preparePython() : ""
        let admin = PostgresClient(configuration: configuration)
        let adminRun = Task { await admin.run() }
        defer { adminRun.cancel() }
        try await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return try await body(Fleet(settings: self, url: url, admin: admin, python: python))
    }
}
