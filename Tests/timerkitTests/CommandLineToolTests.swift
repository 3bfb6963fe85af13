import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The subcommands, run as a person runs them: the built binary, its output and exit status.
/// Real-time checks assert what holds on a loaded machine: never early, on the grid, counts that
/// add up, order.
@Suite("timerkit subcommands", .timeLimit(.minutes(2)))
struct CommandLineToolTests {
    // MARK: Usage and exit statuses

    @Test("a bare timerkit prints help with one example per subcommand; --version prints the version")
    func helpAndVersion() async throws {
        let help = try await ToolRunner.run([])
        #expect(help.status == 0)
        for example in [
            "timerkit countdown 25m", "timerkit stopwatch", "timerkit every 1s", "timerkit every --on", "timerkit after 1m 30s", "timerkit at 9:30am",
            "timerkit timeout 10s", "timerkit demo"
        ] {
            #expect(help.output.contains(example), "\(example) is missing from: \(help.output)")
        }
        let version = try await ToolRunner.run(["--version"])
        #expect(version.status == 0)
        #expect(version.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".").count == 3)
    }

    @Test("every subcommand's help reads at 80 columns: no line is longer")
    func helpFitsEightyColumns() async throws {
        for subcommand in [[], ["countdown"], ["stopwatch"], ["every"], ["after"], ["at"], ["timeout"], ["demo"]] {
            let help = try await ToolRunner.run(subcommand + ["--help"], environment: ["COLUMNS": "80"])
            #expect(help.status == 0)
            let long = help.output.split(separator: "\n").filter { $0.count > 80 }
            #expect(long.isEmpty, "timerkit \(subcommand.joined()) --help: \(long)")
        }
    }

    @Test(
        "bad input gets one line naming the problem, the usage, and exit 64",
        arguments: [
            (["every", "5x", "--", "true"], "unknown unit 'x'"),
            (["every", "0s", "--", "true"], "the interval must be more than zero"),
            (["every", "-1s", "--", "true"], "negative duration"),
            (["every", "1s", "--count", "0", "--", "true"], "--count must be at least 1"),
            (["every", "1s", "--tolerance", "2s", "--", "true"], "--tolerance 2s is more than the interval (1s)"),
            (["every", "1s", "--tolerance", "150%", "--", "true"], "more than 100 %"),
            (["every", "1s"], "missing command after --"),
            (["every", "1s", "--missed", "sometimes", "--", "true"], "sometimes"),
            (["after", "2s"], "missing command after --"),
            (["at", "25:00", "--", "true"], "impossible time '25:00'"),
            (["at", "2001-01-01T00:00:00Z", "--", "true"], "is in the past"),
            (["countdown", "soon"], "invalid duration 'soon'"),
            (["countdown", "0s"], "the countdown must be more than zero"),
            // Beyond what the library takes: refused as input, never exit 1 or a crash later.
            (["countdown", "2400-01-01T00:00"], "too far ahead"),
            (["countdown", "9223372036s"], "at most 100 years"),
            (["after", "9223372036s", "--", "true"], "at most 100 years"),
            (["every", "1s", "--for", "9223372036s", "--", "true"], "at most 100 years"),
            (["every", "15000w", "--dry-run", "--", "true"], "at most 100 years"),
            (["sometimes"], "sometimes"),
            (["countdown", "-µs&.879hr"], "unknown option '-µs&.879hr'"),
            (["-&h"], "unknown option '-&h'"),
            (["timeout", "1s"], "missing command after the limit"),
            (["timeout", "-k", "5x", "1s", "true"], "unknown unit 'x'"),
            (["timeout", "1s", "--signal", "LOUD", "--", "true"], "unknown signal 'LOUD'"),
            (["timeout", "-s", "LOUD", "1s", "true"], "unknown signal 'LOUD'"),
            (["timeout", "--bogus", "1s", "true"], "Unknown option '--bogus'")
        ])
    func badInput(arguments: [String], problem: String) async throws {
        let outcome = try await ToolRunner.run(arguments)
        #expect(outcome.status == 64, "\(outcome.error)")
        #expect(outcome.error.contains(problem), "\(outcome.error)")
        #expect(outcome.error.contains("Usage:"), "\(outcome.error)")
        #expect(!outcome.error.contains("Fatal error") && !outcome.error.contains("Stack dump"))
    }

    @Test(
        "a command that is not found, or cannot be run, is reported before any waiting: at, after and every an hour ahead exit 127 or 126 at once",
        arguments: [
            (["after", "1h", "--", "no-such-command-timerkit"], Int32(127), "command not found: no-such-command-timerkit"),
            (["at", "2126-01-01T00:00Z", "--", "no-such-command-timerkit", "arg"], 127, "command not found: no-such-command-timerkit"),
            (["every", "1h", "--", "/no/such/dir/tool"], 127, "command not found: /no/such/dir/tool"),
            (["after", "1h", "--", "/tmp"], 126, "cannot run /tmp")
        ])
    func commandCheckedFirst(arguments: [String], status: Int32, message: String) async throws {
        let outcome = try await ToolRunner.run(arguments)
        #expect(outcome.status == status, "\(outcome.error)")
        #expect(outcome.error.contains(message), "\(outcome.error)")
    }

    @Test("a command that is not found exits 127, one that cannot be run 126, one killed by a signal 128 + n")
    func commandStatuses() async throws {
        let missing = try await ToolRunner.run(["after", "0s", "--", "no-such-command-timerkit"])
        #expect(missing.status == 127)
        #expect(missing.error.contains("command not found: no-such-command-timerkit"))

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("timerkit-not-executable-\(getpid())")
        try "echo hi\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let notExecutable = try await ToolRunner.run(["after", "0s", "--", file.path])
        #expect(notExecutable.status == 126, "\(notExecutable.error)")
        let notExecutableLater = try await ToolRunner.run(["every", "1h", "--", file.path])
        #expect(
            notExecutableLater.status == 126 && notExecutableLater.error.contains("cannot run \(file.path)"),
            "reported before the first run: \(notExecutableLater.error)")

        let killed = try await ToolRunner.run(["after", "0s", "--", "sh", "-c", "kill -TERM $$"])
        #expect(killed.status == 128 + SIGTERM)

        let everyMissing = try await ToolRunner.run(["every", "100ms", "--", "no-such-command-timerkit"])
        #expect(everyMissing.status == 127)
    }

    // MARK: after and at

    @Test("after runs the command once, never early, and takes its exit status")
    func after() async throws {
        let outcome = try await ToolRunner.run(["after", "300ms", "--", "sh", "-c", "echo ran; exit 3"])
        #expect(outcome.status == 3)
        #expect(outcome.output == "ran\n")
        #expect(outcome.seconds >= 0.3)
    }

    @Test("at runs the command at a wall-clock time, never early")
    func at() async throws {
        // Far enough ahead that the tool, started slowly under a sanitizer on a busy machine, still
        // reads it as future (an ISO time in the past is refused with status 64).
        let target = Date().addingTimeInterval(10)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let outcome = try await ToolRunner.run(["at", formatter.string(from: target), "--"] + ToolRunner.printTime)
        #expect(outcome.status == 0, "\(outcome.error)")
        let ran = try #require(Double(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)))
        // The reading is truncated to the microsecond.
        #expect(ran >= target.timeIntervalSince1970 - 1e-6)
    }

    @Test("--dry-run prints when the runs would start and runs nothing")
    func dryRun() async throws {
        let every = try await ToolRunner.run(["every", "90m", "--count", "3", "--dry-run", "--", "false"])
        #expect(every.status == 0)
        #expect(every.output.contains("the first 3 runs would start at"))
        #expect(every.output.contains("(+1h30m)") && every.output.contains("(+3h)"))
        let at = try await ToolRunner.run(["at", "23:59:59", "--dry-run", "--", "false"])
        #expect(at.status == 0)
        #expect(at.output.contains("would run at"))
        let after = try await ToolRunner.run(["after", "2m", "--dry-run"])
        #expect(after.status == 0 && after.output.contains("would run at"))
    }

    @Test("a signal while waiting ends after and at with 128 + n, and the command never runs")
    func signalWhileWaiting() async throws {
        let outcome = try await ToolRunner.run(["after", "30s", "--", "sh", "-c", "echo ran"], interrupt: .whenReady)
        #expect(outcome.status == 130)
        #expect(outcome.output.isEmpty)
    }

    // MARK: every

    /// The `--json` lines of an `every` run.
    struct Run: Decodable {
        var run: Int
        var deadline: Double
        var start: Double
        var latenessMilliseconds: Double
        var exitStatus: Int32
        var durationMilliseconds: Double

        enum CodingKeys: String, CodingKey {
            case run, deadline, start
            case latenessMilliseconds = "lateness_ms"
            case exitStatus = "exit_status"
            case durationMilliseconds = "duration_ms"
        }
    }

    static func runs(_ output: String) throws -> [Run] {
        try output.split(separator: "\n").map { try JSONDecoder().decode(Run.self, from: Data($0.utf8)) }
    }

    @Test("every runs on its grid, start to start: deadlines first + k·interval, no run early, runs in order, and the summary adds up")
    func grid() async throws {
        let outcome = try await ToolRunner.run(["every", "100ms", "--count", "8", "--json", "--", "sh", "-c", "echo child"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let runs = try Self.runs(outcome.output)
        #expect(runs.map(\.run) == Array(1...8))
        let first = try #require(runs.first).deadline
        for run in runs {
            // On the grid: the deadline a run stands for is first + k·interval (µs in the JSON).
            let k = ((run.deadline - first) / 0.1).rounded()
            #expect(abs(run.deadline - (first + k * 0.1)) < 2e-6)
            #expect(run.latenessMilliseconds >= 0)
            #expect(run.exitStatus == 0)
        }
        // In order, never overlapping: each starts after the previous one's deadline and end.
        for (previous, next) in zip(runs, runs.dropFirst()) {
            #expect(next.deadline > previous.deadline)
            #expect(next.start >= previous.start + previous.durationMilliseconds / 1000 - 2e-6)
        }
        // The command's own output went to stderr; stdout is JSON only.
        #expect(outcome.error.components(separatedBy: "child\n").count - 1 == 8)
        // The summary adds up: the deadlines skipped are those between the runs, plus — when the
        // first run came late (a loaded machine) — those between the tool's start, the grid's
        // origin (`first: .now`), and the first run. So the origin they put the grid at is not
        // before the tool was started (the JSON's times are wall-clock seconds).
        let between = Int(((runs.last!.deadline - first) / 0.1).rounded()) + 1 - runs.count
        #expect(outcome.error.contains("timerkit every: 8 runs in "))
        let summary = try #require(outcome.error.firstMatch(of: /; (\d+) deadlines? skipped;/), "\(outcome.error)")
        let skipped = try #require(Int(summary.1))
        #expect(skipped >= between, "\(outcome.error)")
        #expect(first - Double(skipped - between) * 0.1 >= outcome.began.timeIntervalSince1970 - 0.001, "\(outcome.error)")
    }

    @Test("each run's command reads the clock no earlier than its grid deadline, and the deadlines are on the grid first + k·interval")
    func childSeesGrid() async throws {
        // With --json the command's output goes to stderr: there, each run's own reading of the clock.
        let outcome = try await ToolRunner.run(["every", "150ms", "--count", "5", "--json", "--"] + ToolRunner.printTime)
        #expect(outcome.status == 0, "\(outcome.error)")
        let runs = try Self.runs(outcome.output)
        let readings = outcome.error.split(separator: "\n").compactMap { Double($0) }
        try #require(runs.count == 5 && readings.count == 5)
        for (k, (run, reading)) in zip(runs, readings).enumerated() {
            // On the grid, in order; a run that overran its interval (a slow start under load)
            // makes the next deadline a later grid point, so k is not always the index.
            let steps = (run.deadline - runs[0].deadline) / 0.15
            #expect(abs(steps - steps.rounded()) * 0.15 < 2e-6, "run \(k + 1) is off the grid")
            #expect(k == 0 || run.deadline > runs[k - 1].deadline)
            // Never early: the command ran after its deadline (the JSON's instants are µs-rounded).
            #expect(reading >= run.deadline - 2e-6, "run \(k + 1) read \(reading), deadline \(run.deadline)")
            #expect(reading >= run.start - 2e-6)
        }
    }

    @Test("skip: a run that overruns its interval makes the deadlines that came during it wait for the next one, counted as skipped")
    func overrunSkips() async throws {
        let outcome = try await ToolRunner.run(["every", "100ms", "--count", "3", "--json", "--", "sleep", "0.25"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let runs = try Self.runs(outcome.output)
        #expect(runs.count == 3)
        let first = runs[0].deadline
        var accounted = 0
        for (previous, next) in zip(runs, runs.dropFirst()) {
            // Each run's deadline came after the previous run had ended: it waited for the grid.
            #expect(next.deadline >= previous.start + previous.durationMilliseconds / 1000 - 2e-6)
            accounted = Int(((next.deadline - first) / 0.1).rounded())
        }
        // At least the two deadlines inside each 250 ms run were skipped between the runs. The
        // summary adds those skipped before the first run, when it came late (a loaded machine):
        // the origin they put the grid at is not before the tool was started.
        let between = accounted + 1 - runs.count
        #expect(between >= 4)
        let summary = try #require(outcome.error.firstMatch(of: /; (\d+) deadlines? skipped;/), "\(outcome.error)")
        let skipped = try #require(Int(summary.1))
        #expect(skipped >= between, "\(outcome.error)")
        #expect(first - Double(skipped - between) * 0.1 >= outcome.began.timeIntervalSince1970 - 0.001, "\(outcome.error)")
    }

    @Test("coalesce: one run at once stands for every deadline missed while a run overran, counted as coalesced")
    func overrunCoalesces() async throws {
        let outcome = try await ToolRunner.run(["every", "100ms", "--count", "3", "--missed", "coalesce", "--json", "--", "sleep", "0.25"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let runs = try Self.runs(outcome.output)
        #expect(runs.count == 3)
        #expect(outcome.error.contains("deadlines coalesced"))
        #expect(!outcome.error.contains("; 0 deadlines coalesced"))
    }

    @Test("--fail-fast stops at the first failing run and exits with its status; without it failures are counted")
    func failFast() async throws {
        let stopped = try await ToolRunner.run(["every", "50ms", "--count", "5", "--fail-fast", "--", "sh", "-c", "exit 4"])
        #expect(stopped.status == 4)
        #expect(stopped.error.contains("timerkit every: 1 run in"))
        let counted = try await ToolRunner.run(["every", "50ms", "--count", "3", "--", "sh", "-c", "exit 4"])
        #expect(counted.status == 0)
        #expect(counted.error.contains("3 failures"))
    }

    @Test("--for ends the runs after a time; the runs done fit in it")
    func forDuration() async throws {
        let outcome = try await ToolRunner.run(["every", "100ms", "--for", "450ms", "--json", "--", "true"])
        #expect(outcome.status == 0, "\(outcome.error)")
        let runs = try Self.runs(outcome.output)
        // Deadlines at 0, 100, …, 400 ms lie inside 450 ms; on a loaded machine some may be skipped.
        #expect((1...5).contains(runs.count))
        if let first = runs.first, let last = runs.last { #expect(last.deadline - first.deadline < 0.45) }
    }

    @Test("Ctrl-C stops every: the signal reaches the running command, the summary is printed and counts that run as interrupted, not failed, exit 130")
    func interruptForwards() async throws {
        let outcome = try await ToolRunner.run(["every", "1s", "--", "sh", "-c", "echo $$; exec sleep 30"], interrupt: .afterOutput("\n"))
        #expect(outcome.status == 130)
        #expect(outcome.error.contains("timerkit every: 1 run in"))
        #expect(outcome.error.contains("0 failures; run 1 interrupted"), "\(outcome.error)")
        // The child is gone (the tool waited for it).
        if let pid = Int32(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)) {
            #expect(kill(pid, 0) == -1)
        }
    }

    @Test("a command that ignores the signal is killed after the grace period")
    func graceThenKill() async throws {
        let outcome = try await ToolRunner.run(["every", "1s", "--", "sh", "-c", "trap '' INT; echo $$; exec sleep 30"], interrupt: .afterOutput("\n"))
        #expect(outcome.status == 130)
        #expect(outcome.seconds >= 2)
        #expect(outcome.error.contains("0 failures; run 1 interrupted"), "killed after the grace period, still the interrupted run: \(outcome.error)")
    }

    // MARK: timeout

    @Test("timeout: a command still running at the limit gets TERM and timerkit exits 124, never before the limit; one that ends first gives its own status")
    func timeoutLimits() async throws {
        let limited = try await ToolRunner.run(["timeout", "300ms", "--", "sleep", "20"])
        // 124 says the limit ended it (run to its end, `sleep 20` would give 0); no upper bound on
        // the time: under load a spawn alone once took more than the 15 s this test allowed.
        #expect(limited.status == 124, "\(limited.error)")
        #expect(limited.seconds >= 0.3)
        let quick = try await ToolRunner.run(["timeout", "20s", "--", "sh", "-c", "echo ran; exit 3"])
        // Its own status, not 124: it ended before the limit.
        #expect(quick.status == 3 && quick.output == "ran\n")
        let missing = try await ToolRunner.run(["timeout", "1s", "--", "no-such-command-timerkit"])
        #expect(missing.status == 127 && missing.error.contains("command not found"))
    }

    @Test("timeout --signal sends the named signal; --kill-after kills a command that ignores it (exit 137)")
    func timeoutSignals() async throws {
        let interrupted = try await ToolRunner.run([
            "timeout", "300ms", "--signal", "INT", "--", "sh", "-c", "trap 'echo got INT; exit 5' INT; sleep 20 >/dev/null 2>&1 & wait"
        ])
        #expect(interrupted.status == 124)
        #expect(interrupted.output.contains("got INT"))
        let stubborn = try await ToolRunner.run(["timeout", "300ms", "--kill-after", "300ms", "--", "sh", "-c", "trap '' TERM; exec sleep 20"])
        #expect(stubborn.status == 137, "\(stubborn.error)")
        #expect(stubborn.seconds >= 0.6, "never before the limit and the grace; 137 says the kill ended it")
    }

    // MARK: countdown

    @Test("countdown into a pipe prints one plain line per second, 3, 2, 1, 0, and exits 0")
    func countdownPiped() async throws {
        let outcome = try await ToolRunner.run(["countdown", "3s", "--label", "tea"])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output == "0:03  tea\n0:02  tea\n0:01  tea\n0:00  tea\n")
        #expect(!outcome.output.contains("\u{1B}"))
        #expect(outcome.seconds >= 3)
    }

    @Test("countdown on a terminal redraws one line, pauses and resumes on p, and q quits with the terminal restored")
    func countdownTerminal() async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["countdown", "1m", "--label", "tea"])
        #expect(await terminal.wait { $0.contains("1:00  tea") })
        #expect(terminal.text.contains("\r\u{1B}[2K"))
        #expect(terminal.text.contains("\u{1B}[32m"))  // colour on a terminal
        #expect(await terminal.wait { _ in !terminal.isCanonicalWithEcho })
        terminal.type("p")
        #expect(await terminal.wait { $0.contains("paused · p resume") })
        terminal.type("p")
        #expect(await terminal.wait { $0.hasSuffix("p pause · q quit\u{1B}[0m") })
        terminal.type("q")
        #expect(await ToolRunner.waitForExit(pid) == 130)
        #expect(terminal.isCanonicalWithEcho)
        #expect(await terminal.wait { $0.contains("\u{1B}[?25h") })  // the cursor is shown again
    }

    @Test(
        "countdown on a terminal: Ctrl-Z (SIGTSTP) gives the terminal back as it was and stops the process; fg (SIGCONT) takes the keys again, redraws, and p pauses at once"
    )
    func countdownSuspended() async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["countdown", "1m"])
        #expect(await terminal.wait { $0.contains("1:00") })
        #expect(await terminal.wait { _ in !terminal.isCanonicalWithEcho })
        #expect(await ToolRunner.isCatching(SIGTSTP, pid: pid))
        kill(pid, SIGTSTP)
        #expect(await ToolRunner.eventually { ToolRunner.hasStopped(pid) }, "stopped, as a job the shell can resume")
        #expect(terminal.isCanonicalWithEcho, "echo and line mode while stopped")
        // What the tool wrote before it stopped reaches the test through the reader of the
        // terminal's other end, which a loaded machine may not have run yet.
        #expect(await terminal.wait { $0.hasSuffix("\r\n\u{1B}[?25h") }, "the cursor shown, on a line of its own")
        let before = terminal.text.utf8.count
        kill(pid, SIGCONT)
        #expect(await terminal.wait { _ in !terminal.isCanonicalWithEcho }, "key mode again")
        #expect(await terminal.wait { String(decoding: $0.utf8.dropFirst(before), as: UTF8.self).contains("\u{1B}[?25l") }, "the cursor hidden again")
        terminal.type("p")
        #expect(await terminal.wait { String(decoding: $0.utf8.dropFirst(before), as: UTF8.self).contains("paused · p resume") })
        terminal.type("q")
        #expect(await ToolRunner.waitForExit(pid) == 130)
        #expect(terminal.isCanonicalWithEcho)
    }

    @Test("countdown on a terminal at zero: the line says done without the keys, the bell rings once (never with --quiet), exit 0", arguments: [false, true])
    func countdownEnds(quiet: Bool) async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["countdown", "1s"] + (quiet ? ["--quiet"] : []), environment: ["NO_COLOR": "1"])
        #expect(await ToolRunner.waitForExit(pid) == 0)
        #expect(await terminal.wait { $0.contains("0:00   done") })
        // The cursor is shown last, as the tool exits: everything before it has been read.
        #expect(await terminal.wait { $0.contains("\u{1B}[?25h") })
        let last = terminal.text.components(separatedBy: "\u{1B}[2K").last ?? ""
        #expect(last.contains("0:00   done") && !last.contains("q quit"), "\(last.debugDescription)")
        #expect(terminal.text.filter { $0 == "\u{7}" }.count == (quiet ? 0 : 1))
    }

    @Test("countdown on a terminal: Ctrl-C exits 130 with the terminal restored, and NO_COLOR turns colour off")
    func countdownInterrupted() async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["countdown", "1m"], environment: ["NO_COLOR": "1"])
        #expect(await terminal.wait { $0.contains("1:00") })
        #expect(await terminal.wait { _ in !terminal.isCanonicalWithEcho })
        #expect(await ToolRunner.isCatching(SIGINT, pid: pid))
        kill(pid, SIGINT)
        #expect(await ToolRunner.waitForExit(pid) == 130)
        #expect(terminal.isCanonicalWithEcho)
        #expect(await terminal.wait { $0.contains("\u{1B}[?25h") })  // all the tool wrote has been read
        #expect(!terminal.text.contains("\u{1B}[32m"))
    }
}
