import Foundation
import Testing

@testable import timerkit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `timerkit timeout` where a script written for GNU `timeout` puts it: GNU's command line (no
/// `--`, short and long options), a limit of 0, `--preserve-status`, `--verbose`, `--foreground`.
/// Through the built binary; times are asserted as "not before the limit", never as an upper bound.
@Suite("timerkit timeout, as GNU timeout", .timeLimit(.minutes(2)))
struct TimeoutCommandTests {
    /// A shell that prints "got INT" and exits 5 on SIGINT, and waits meanwhile.
    static let trapsInt = ["sh", "-c", "trap 'echo got INT; exit 5' INT; sleep 20 >/dev/null 2>&1 & wait"]
    /// A command that ignores TERM (only KILL ends it).
    static let ignoresTerm = ["sh", "-c", "trap '' TERM; exec sleep 20"]

    @Test("GNU's command line is read as ArgumentParser needs it: -- before the command, short options apart, long ones in full")
    func normalizedArguments() {
        let cases: [([String], [String])] = [
            (["5", "make", "-j4"], ["5", "--", "make", "-j4"]),
            (["-s", "KILL", "5", "ls", "-l"], ["-s", "KILL", "5", "--", "ls", "-l"]),
            (["5", "--", "ls", "-l"], ["5", "--", "ls", "-l"]),
            (["5", "ls", "--", "-l"], ["5", "--", "ls", "--", "-l"]),
            (["-sKILL", "-k5", "1m", "x"], ["-s", "KILL", "-k", "5", "1m", "--", "x"]),
            (["-vsINT", "5", "x", "-v"], ["-v", "-s", "INT", "5", "--", "x", "-v"]),
            (
                ["--sig=INT", "--pres", "--fore", "--kill", "2", "5", "x"],
                ["--signal=INT", "--preserve-status", "--foreground", "--kill-after", "2", "5", "--", "x"]
            ),
            (["30s", "--kill-after", "5s", "--", "curl"], ["30s", "--kill-after", "5s", "--", "curl"]),
            (["--", "5", "x"], ["5", "--", "x"]),
            (["5"], ["5"]),
            (["--help"], ["--help"]),
            (["-1s", "--", "x"], ["-1s", "--", "x"])
        ]
        for (arguments, expected) in cases {
            #expect(TimeoutCommand.normalized(arguments) == expected, "\(arguments)")
        }
    }

    @Test("timeout 0 runs the command with no limit: it ends on its own, with its own output and status")
    func zeroIsNoLimit() async throws {
        let unlimited = try await ToolRunner.run(["timeout", "0", "sh", "-c", "sleep 0.5; echo done; exit 3"])
        #expect(unlimited.status == 3, "\(unlimited.error)")
        #expect(unlimited.output == "done\n")
        #expect(unlimited.seconds >= 0.5)
        let quiet = try await ToolRunner.run(["timeout", "-v", "-k", "0", "0s", "true"])
        #expect(quiet.status == 0, "\(quiet.error)")
        #expect(quiet.error.isEmpty, "no signal was sent: \(quiet.error)")
    }

    @Test("--preserve-status: a command the limit's TERM kills exits 143, not 124, never before the limit; one killed after -k still 137")
    func preserveStatusOfKilledCommand() async throws {
        let terminated = try await ToolRunner.run(["timeout", "--preserve-status", "300ms", "sleep", "20"])
        #expect(terminated.status == 128 + SIGTERM, "\(terminated.error)")
        #expect(terminated.seconds >= 0.3)
        let killed = try await ToolRunner.run(["timeout", "--preserve-status", "-k", "300ms", "300ms"] + Self.ignoresTerm)
        #expect(killed.status == 128 + SIGKILL, "\(killed.error)")
        #expect(killed.seconds >= 0.6)
    }

    @Test("--preserve-status: a command that exits on its own gives its status, before the limit or on the signal")
    func preserveStatusOfExitingCommand() async throws {
        let early = try await ToolRunner.run(["timeout", "--preserve-status", "20s", "sh", "-c", "echo ran; exit 3"])
        #expect(early.status == 3 && early.output == "ran\n", "\(early.error)")
        let onSignal = ["sh", "-c", "trap 'echo got TERM; exit 5' TERM; sleep 20 >/dev/null 2>&1 & wait"]
        let preserved = try await ToolRunner.run(["timeout", "--preserve-status", "300ms"] + onSignal)
        #expect(preserved.status == 5, "\(preserved.error)")
        #expect(preserved.output == "got TERM\n")
        #expect(preserved.seconds >= 0.3)
        let timedOut = try await ToolRunner.run(["timeout", "300ms"] + onSignal)
        #expect(timedOut.status == 124, "without --preserve-status: \(timedOut.error)")
    }

    @Test("the command needs no --: everything after the duration is the command's, its own options included; -- still works")
    func commandWithoutTerminator() async throws {
        let options = try await ToolRunner.run(["timeout", "20s", "sh", "-c", "echo \"$@\"", "sh", "-la", "-k", "3", "--", "x"])
        #expect(options.status == 0, "\(options.error)")
        #expect(options.output == "-la -k 3 -- x\n")
        let help = try await ToolRunner.run(["timeout", "20s", "printf", "%s\\n", "--help", "-v"])
        #expect(help.status == 0 && help.output == "--help\n-v\n", "the command's --help, not timerkit's: \(help.output)")
        let limited = try await ToolRunner.run(["timeout", "-s", "KILL", "300ms", "sleep", "20"])
        #expect(limited.status == 137, "\(limited.error)")
        #expect(limited.seconds >= 0.3)
        let terminated = try await ToolRunner.run(["timeout", "20s", "--", "printf", "%s\\n", "-l"])
        #expect(terminated.status == 0 && terminated.output == "-l\n", "\(terminated.error)")
        let missing = try await ToolRunner.run(["timeout", "20s", "no-such-command-timerkit", "-x"])
        #expect(missing.status == 127 && missing.error.contains("command not found: no-such-command-timerkit"))
    }

    @Test(
        "-s takes a signal's name with or without SIG, in any case, or its number, apart or attached, as --signal does",
        arguments: [["-s", "INT"], ["-sINT"], ["-s", "sigint"], ["-s", "2"], ["--signal=SIGINT"], ["--sig", "int"]])
    func shortSignalOption(signal: [String]) async throws {
        let outcome = try await ToolRunner.run(["timeout"] + signal + ["300ms"] + Self.trapsInt)
        #expect(outcome.status == 124, "\(outcome.error)")
        #expect(outcome.output.contains("got INT"))
        #expect(outcome.seconds >= 0.3)
    }

    @Test(
        "-k kills a command that ignores the signal (exit 137), never before the limit plus the wait",
        arguments: [["-k", "300ms"], ["-k300ms"], ["--kill-after=300ms"], ["--kill-after", "0.3"]])
    func shortKillAfterOption(killAfter: [String]) async throws {
        let outcome = try await ToolRunner.run(["timeout"] + killAfter + ["300ms"] + Self.ignoresTerm)
        #expect(outcome.status == 137, "\(outcome.error)")
        #expect(outcome.seconds >= 0.6)
    }

    @Test("-k 0 never kills: a command that ignores the signal runs to its end, and the status is still 124")
    func killAfterZero() async throws {
        let outcome = try await ToolRunner.run(["timeout", "-k", "0", "300ms", "sh", "-c", "trap '' TERM; sleep 1"])
        #expect(outcome.status == 124, "\(outcome.error)")
        #expect(outcome.seconds >= 1)
    }

    @Test("-v says on stderr, in GNU's words, each signal sent to the command; without it nothing is said")
    func verbose() async throws {
        let killed = try await ToolRunner.run(["timeout", "-v", "-k", "300ms", "300ms"] + Self.ignoresTerm)
        #expect(killed.status == 137)
        #expect(
            killed.error == "timerkit timeout: sending signal TERM to command 'sh'\ntimerkit timeout: sending signal KILL to command 'sh'\n",
            "\(killed.error)")
        let interrupted = try await ToolRunner.run(["timeout", "--verbose", "-s", "INT", "300ms", "sleep", "20"])
        #expect(interrupted.status == 124)
        #expect(interrupted.error == "timerkit timeout: sending signal INT to command 'sleep'\n", "\(interrupted.error)")
        let quick = try await ToolRunner.run(["timeout", "-v", "20s", "true"])
        #expect(quick.status == 0 && quick.error.isEmpty, "no signal was sent: \(quick.error)")
        let silent = try await ToolRunner.run(["timeout", "300ms", "sleep", "20"])
        #expect(silent.status == 124 && silent.error.isEmpty, "\(silent.error)")
    }

    @Test("--foreground: the command stays in timerkit's process group and gets the signal alone, so what it started is not timed out")
    func foreground() async throws {
        let printGroup = ["perl", "-e", "print getpgrp(), qq( ), $$, qq(\\n)"]
        let inGroup = try await ToolRunner.run(["timeout", "--foreground", "20s"] + printGroup)
        let groupAndPID = inGroup.output.split(whereSeparator: \.isWhitespace).compactMap { pid_t($0) }
        #expect(inGroup.status == 0 && groupAndPID.count == 2, "\(inGroup.output) \(inGroup.error)")
        #expect(groupAndPID.first == getpgrp(), "timerkit's group, which it shares with the tests: \(inGroup.output)")
        let ownGroup = try await ToolRunner.run(["timeout", "20s"] + printGroup)
        let leader = ownGroup.output.split(whereSeparator: \.isWhitespace).compactMap { pid_t($0) }
        #expect(leader.count == 2 && leader[0] == leader[1], "without --foreground, a group of its own: \(ownGroup.output)")

        let outcome = try await ToolRunner.run(["timeout", "--foreground", "500ms", "sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!; wait"])
        #expect(outcome.status == 124, "\(outcome.error)")
        #expect(outcome.seconds >= 0.5)
        let grandchild = try #require(JobControlTests.printedPID(outcome.output))
        defer { kill(grandchild, SIGKILL) }
        #expect(!JobControlTests.hasEnded(grandchild), "the background sleep \(grandchild) got the signal")

        let killed = try await ToolRunner.run(["timeout", "--foreground", "-k", "300ms", "300ms"] + Self.ignoresTerm)
        #expect(killed.status == 137, "\(killed.error)")
        #expect(killed.seconds >= 0.6)
    }

    @Test("durations in GNU's forms: 5, 5s, 1.5m, 2h, 1d, 0.5, .5 (a bare number is seconds)")
    func gnuDurations() async throws {
        for limit in ["5", "5s", "1.5m", "2h", "1d"] {
            let outcome = try await ToolRunner.run(["timeout", limit, "true"])
            #expect(outcome.status == 0, "\(limit): \(outcome.error)")
        }
        for limit in ["0.5", ".5"] {
            let outcome = try await ToolRunner.run(["timeout", limit, "sleep", "20"])
            #expect(outcome.status == 124, "\(limit): \(outcome.error)")
            #expect(outcome.seconds >= 0.5)
        }
    }
}
