import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The commands `timerkit` runs are jobs of their own: a process group that every signal reaches
/// (nothing they start survives a timeout or a kill), given the terminal while they run as a shell
/// gives it. Through the built binary, on pseudo-terminals for the terminal cases.
@Suite("timerkit: the command's process group and the terminal", .timeLimit(.minutes(2)))
struct JobControlTests {
    /// Whether process `pid` has ended (gone, or a zombie nobody has reaped yet).
    static func hasEnded(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 else { return true }
        #if os(Linux)
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        return status.contains("State:\tZ")
        #else
        return false
        #endif
    }

    /// The pid a command printed on its first line.
    static func printedPID(_ text: String) -> pid_t? {
        text.split(separator: "\n").first.flatMap { pid_t($0.trimmingCharacters(in: .whitespaces)) }
    }

    @Test("timeout signals the command's whole process group: a grandchild started in the background ends with it")
    func timeoutReachesGrandchildren() async throws {
        let outcome = try await ToolRunner.run(["timeout", "500ms", "--", "sh", "-c", "sleep 300 & echo $!; wait"])
        #expect(outcome.status == 124, "\(outcome.error)")
        let grandchild = try #require(Self.printedPID(outcome.output))
        #expect(await ToolRunner.eventually { Self.hasEnded(grandchild) }, "the background sleep \(grandchild) outlived the timeout")
    }

    @Test("after the grace period KILL reaches the whole group: a grandchild that ignores INT and TERM ends too")
    func graceKillReachesGrandchildren() async throws {
        let outcome = try await ToolRunner.run(
            ["every", "10s", "--", "sh", "-c", "trap '' INT TERM; sleep 300 & echo $!; wait"], interrupt: .afterOutput("\n"))
        #expect(outcome.status == 130)
        #expect(outcome.seconds >= 2, "killed only after the grace period")
        let grandchild = try #require(Self.printedPID(outcome.output))
        #expect(await ToolRunner.eventually { Self.hasEnded(grandchild) }, "the background sleep \(grandchild) outlived the kill")
    }

    @Test("every --timeout stops a run that takes too long, with its process group; it counts as a failure with status 124 and the grid goes on")
    func everyTimeout() async throws {
        let outcome = try await ToolRunner.run(
            ["every", "1s", "--count", "2", "--timeout", "300ms", "--json", "--", "sh", "-c", "sleep 300 & echo $! >&2; wait"])
        #expect(outcome.status == 0, "without --fail-fast a timed-out run is counted, not fatal: \(outcome.error)")
        let runs = outcome.output.split(separator: "\n")
        #expect(runs.count == 2)
        #expect(runs.allSatisfy { $0.contains("\"exit_status\":124") }, "\(runs)")
        // Each run lasted at least the timeout: never stopped early.
        for run in runs {
            let duration = run.split(separator: ",").first { $0.hasPrefix("\"duration_ms\":") }
                .flatMap { Double($0.dropFirst("\"duration_ms\":".count).trimmingCharacters(in: CharacterSet(charactersIn: "}"))) }
            #expect((duration ?? 0) >= 300, "\(run)")
        }
        #expect(outcome.error.contains("timerkit every: run 1 timed out after 300ms"))
        #expect(outcome.error.contains("2 failures (2 timed out)"), "\(outcome.error)")
        for grandchild in outcome.error.split(separator: "\n").compactMap({ pid_t($0) }) {
            #expect(await ToolRunner.eventually { Self.hasEnded(grandchild) })
        }
        let fatal = try await ToolRunner.run(["every", "1s", "--timeout", "200ms", "--fail-fast", "--", "sleep", "300"])
        #expect(fatal.status == 124)
    }

    @Test("at a terminal the command gets the terminal while it runs: it reads what is typed (a command in a background group would be stopped)")
    func commandReadsTheTerminal() async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["after", "0s", "--", "sh", "-c", "echo ready; read line; echo got:$line"], asJob: true)
        #expect(await terminal.wait { $0.contains("ready") }, "\(terminal.text.debugDescription)")
        terminal.type("hello\n")
        #expect(await ToolRunner.waitForExit(pid) == 0)
        #expect(await terminal.wait { $0.contains("got:hello") }, "\(terminal.text.debugDescription)")
    }

    @Test("Ctrl-C at a terminal while every's command has it reaches the command and ends every too: exit 130, that run interrupted")
    func controlCAtTheTerminal() async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(["every", "10s", "--", "sh", "-c", "echo started; exec sleep 300"], asJob: true)
        #expect(await terminal.wait { $0.contains("started") })
        terminal.type("\u{03}")
        #expect(await ToolRunner.waitForExit(pid) == 130)
        #expect(await terminal.wait { $0.contains("0 failures; run 1 interrupted") }, "\(terminal.text.debugDescription)")
    }

    @Test(
        "Ctrl-Z at a terminal while a command runs stops the command and timerkit (a stopped job), and the terminal is timerkit's again; fg continues both, the command with the terminal"
    )
    func controlZAtTheTerminal() async throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pid = try terminal.spawn(
            ["after", "0s", "--", "sh", "-c", "echo ready; read first; echo got:$first; read second; echo got:$second"], asJob: true)
        #expect(await terminal.wait { $0.contains("ready") })
        terminal.type("\u{1A}")
        #expect(await ToolRunner.eventually { ToolRunner.hasStopped(pid) }, "timerkit stopped with its command")
        // The master end may ask whose the terminal is (the slave only for its own session).
        #expect(tcgetpgrp(terminal.master) == pid, "the terminal is back with timerkit's group, as a shell expects of a stopped job")
        // fg: the shell gives the job's group the terminal and continues it.
        kill(pid, SIGCONT)
        #expect(await ToolRunner.eventually { tcgetpgrp(terminal.master) != pid }, "the command has the terminal again")
        terminal.type("one\n")
        #expect(await terminal.wait { $0.contains("got:one") }, "\(terminal.text.debugDescription)")
        terminal.type("two\n")
        #expect(await ToolRunner.waitForExit(pid) == 0)
        #expect(await terminal.wait { $0.contains("got:two") })
    }
}
