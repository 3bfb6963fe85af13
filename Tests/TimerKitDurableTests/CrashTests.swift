import Foundation
import GRDB
import Testing
import TimerKitTesting

@testable import TimerKitDurable

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// At-least-once across crashes: `timerkit-durable-probe` runners on a real SQLite file, killed
/// with SIGKILL while they fire, then run again.
@Suite("Durable timers: crashes", .serialized, .timeLimit(.minutes(5)))
struct CrashTests {
    /// One line of the probe's log.
    struct Run: Hashable {
        var key: String
        var sequence: Int64
        var attempt: Int
    }

    struct Log {
        var starts: [Run] = []
        var done: [String] = []

        init(path: String) throws {
            let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.first == "start", fields.count == 5, let sequence = Int64(fields[2]), let attempt = Int(fields[3]) {
                    starts.append(Run(key: String(fields[1]), sequence: sequence, attempt: attempt))
                } else if fields.first == "done", fields.count == 3 {
                    done.append(String(fields[1]))
                }
            }
        }
    }

    /// The built probe, beside the test bundle.
    static var probe: URL { builtExecutable("timerkit-durable-probe") }

    func launch(_ database: TemporaryDatabase, log: String, hang: Bool = false, arguments: [String] = []) throws -> Process {
        let process = Process()
        process.executableURL = Self.probe
        process.arguments = [database.path, log] + (hang ? ["hang"] : []) + arguments
        process.standardError = FileHandle.nullDevice
        // A probe that crashes on purpose ends at once: Swift's backtracer, which would otherwise
        // attach to it first, can hang on a sanitizer's build (and holds the test's output open).
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { _, new in new }
        try process.run()
        return process
    }

    /// Waits (polling, at most `timeout`) for the process to end by itself.
    func ended(_ process: Process, within timeout: Duration = .seconds(120)) async -> Bool {
        let end = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(20)) }
        return !process.isRunning
    }

    /// Ends the process with SIGKILL (`Process.terminate()` sends SIGTERM) and waits for it.
    func killHard(_ process: Process) async {
        _ = kill(process.processIdentifier, SIGKILL)
        _ = await ended(process, within: .seconds(30))
    }

    /// Stores timers for the probe's handler (the test registers it only to schedule).
    func store(_ database: TemporaryDatabase, _ schedule: (DurableTimers) async throws -> Void) async throws {
        let timers = try DurableTimers(path: database.path)
        try await timers.register("probe", payload: String.self) { _, _ in }
        try await schedule(timers)
        await timers.shutdown()
    }

    @Test("SIGKILL while a handler runs: after the lease expires another process runs it again, attempt 2, the same occurrence; nothing lost")
    func killedWhileRunning() async throws {
        let database = try TemporaryDatabase()
        let logPath = database.folder.appendingPathComponent("log").path
        try await store(database) { timers in try await timers.schedule(key: "k", after: .zero, handler: "probe", payload: "x") }
        let hanging = try launch(database, log: logPath, hang: true)
        #expect(try await eventually { try Log(path: logPath).starts.count == 1 })
        await killHard(hanging)
        let runner = try launch(database, log: logPath)
        #expect(await ended(runner), "the second process ran the timer and found the store empty")
        let log = try Log(path: logPath)
        #expect(log.starts.map(\.attempt) == [1, 2])
        #expect(Set(log.starts.map(\.sequence)).count == 1, "one occurrence, so one idempotency key")
        #expect(log.done == ["k"])
    }

    @Test("10,000 timers, the runner killed at 20 random points: every timer fires at least once, and a timer runs again only where a kill interrupted it")
    func killedAtRandomPoints() async throws {
        let database = try TemporaryDatabase()
        let logPath = database.folder.appendingPathComponent("log").path
        let count = 10_000
        try await store(database) { timers in
            let start = Date()
            let batch = (0..<count).map { (key: "t\($0)", at: start.addingTimeInterval(Double($0 % 300) / 100), payload: "p") }
            let stored = try await timers.schedule(batch, handler: "probe")
            #expect(stored == count)
        }
        var random = SeededRandom(seed: 20)
        let kills = 20
        for _ in 0..<kills {
            let process = try launch(database, log: logPath)
            try await Task.sleep(for: .milliseconds(Int.random(in: 100...400, using: &random)))
            await killHard(process)
        }
        let last = try launch(database, log: logPath)
        #expect(await ended(last), "the last process ran every timer left and found the store empty")
        let log = try Log(path: logPath)
        let doneKeys = Set(log.done)
        #expect(doneKeys.count == count, "every timer's handler completed at least once")
        var runsPerKey: [String: Int] = [:]
        for run in log.starts { runsPerKey[run.key, default: 0] += 1 }
        var endsPerKey: [String: Int] = [:]
        for key in log.done { endsPerKey[key, default: 0] += 1 }
        let repeated = runsPerKey.values.filter { $0 > 1 }.count
        // A kill interrupts at most the runs under way (8 at once): those ran again with fewer
        // ends than starts. The others ran again after a run that ended whose end the kill kept
        // from being written (at least once: the claim lapsed, the row stayed) — as many as
        // completed between the last write of ends and the kill, which no setting bounds.
        let interrupted = runsPerKey.filter { key, runs in runs > 1 && (endsPerKey[key] ?? 0) < runs }.count
        #expect(interrupted <= kills * 8, "\(interrupted) timers ran again after a run the kill interrupted")
        print(
            "crash test: \(count) timers, \(kills) kills, \(log.starts.count) runs, \(repeated) timers ran more than once (\(interrupted) after an interrupted run), none lost"
        )
    }

    @Test(
        "A handler that crashes its process (fatalError), maxAttempts 2: each relaunched process claims it once more, counted; after 2 starts the next claim parks it as crashed, and that process lives on"
    )
    func crashLoopIsParked() async throws {
        let database = try TemporaryDatabase()
        let logPath = database.folder.appendingPathComponent("log").path
        try await store(database) { timers in try await timers.schedule(key: "poison", after: .zero, handler: "probe", payload: "x") }
        var exits: [Int32] = []
        for _ in 0..<6 {
            let process = try launch(database, log: logPath, arguments: ["crash", "--max-attempts", "2"])
            guard await ended(process) else {
                await killHard(process)
                Issue.record("launch \(exits.count + 1) did not end by itself")
                return
            }
            exits.append(process.terminationStatus)
            if process.terminationReason == .exit && process.terminationStatus == 0 { break }
        }
        let log = try Log(path: logPath)
        #expect(log.starts.map(\.attempt) == [1, 2], "two starts, each a process that died: \(log.starts)")
        #expect(exits.count == 3, "two crashes, then a process that parked it and exited by itself: \(exits)")
        let timers = try DurableTimers(path: database.path)
        try await timers.register("probe", payload: String.self) { _, _ in }
        let parked = try #require(try await timers.timer(key: "poison"))
        #expect(parked.state == .failed && parked.attempts == 3)
        #expect(parked.lastError?.contains("its handler started 2 times without finishing") == true, "\(parked.lastError ?? "nil")")
    }

    @Test(
        "Rows no release should have written — due at Int64.min (distantPast, 1600), in 1700, a 1 s grid from 1700, an unknown misfire policy, an unreadable rule, text in a number column: the runner parks each with its reason, runs the good one, and lives"
    )
    func badRowsAreParked() async throws {
        let database = try TemporaryDatabase()
        let logPath = database.folder.appendingPathComponent("log").path
        try await store(database) { timers in try await timers.schedule(key: "good", after: .zero, handler: "probe", payload: "x") }
        let year1700: Int64 = -8_520_336_000 * 1_000_000_000
        try await DatabaseQueue(path: database.path).write { db in
            func insert(
                _ key: String, due: DatabaseValueConvertible, readyAt: Int64? = nil, interval: Int64? = nil, rule: String? = nil, misfire: String = "once"
            ) throws {
                try db.execute(
                    sql: """
                        INSERT INTO timerkit_timers (namespace, key, handler, payload, interval_ns, rule, misfire, due_ns, ready_at_ns, sequence)
                        VALUES ('default', ?, 'probe', CAST('"x"' AS BLOB), ?, ?, ?, ?, ?, 1000)
                        """, arguments: [key, interval, rule, misfire, due, readyAt ?? due])
            }
            try insert("past", due: Int64.min)
            try insert("1700", due: year1700)
            try insert("grid-1700", due: year1700, interval: 1_000_000_000)
            try insert("misfire", due: epoch, misfire: "sometimes:3")
            try insert("rule", due: epoch, rule: "{\"weekdays\": \"often\"}")
            try insert("text", due: "soon", readyAt: epoch)
        }
        let process = try launch(database, log: logPath)
        guard await ended(process) else {
            await killHard(process)
            Issue.record("the probe did not park them all and exit by itself")
            return
        }
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "it did not crash")
        let log = try Log(path: logPath)
        #expect(log.starts.map(\.key) == ["good"] && log.done == ["good"])
        let timers = try DurableTimers(path: database.path)
        try await timers.register("probe", payload: String.self) { _, _ in }
        let stored = try await timers.timers()
        #expect(Set(stored.map(\.key)) == ["past", "1700", "grid-1700", "misfire", "rule", "text"], "never deleted")
        #expect(stored.allSatisfy { $0.state == .failed && $0.lastError != nil })
        let reasons = Dictionary(uniqueKeysWithValues: stored.map { ($0.key, $0.lastError ?? "") })
        #expect(reasons["past"]?.contains("outside the dates durable timers keep") == true, "\(reasons)")
        #expect(reasons["grid-1700"]?.contains("outside the dates durable timers keep") == true)
        #expect(reasons["misfire"]?.contains("the misfire policy 'sometimes:3' is unknown") == true)
        #expect(reasons["rule"]?.contains("calendar rule is in a form this version cannot read") == true)
        #expect(reasons["text"]?.contains("due_ns holds") == true)
        // A second process meets only parked rows: it lives and exits too.
        let again = try launch(database, log: logPath)
        let againEnded = await ended(again)
        #expect(againEnded && again.terminationStatus == 0)
        if !againEnded { await killHard(again) }
    }
}
