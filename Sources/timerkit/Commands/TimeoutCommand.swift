import ArgumentParser
import Foundation
import TimerKit

/// `timerkit timeout DURATION [--signal SIG] [--kill-after D] -- COMMAND…`, as GNU `timeout`.
struct TimeoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeout",
        abstract: "Run a command, and stop it if it is still running after a time limit.",
        usage: "timerkit timeout <duration> [<options>] -- <command> [<argument> ...]",
        discussion: """
            At the limit the command gets the signal (TERM by default); with --kill-after it is \
            killed (KILL) if it is still running that long after. The limit is counted on the \
            continuous clock by default. Ctrl-C, TERM and HUP are passed on to the command.

            Exit status, as GNU timeout: 124 if the limit came, 137 if the command had to be \
            killed; otherwise the command's own status (126: not executable, 127: not found).

            Example: timerkit timeout 30s --kill-after 5s -- curl -s https://example.com
            """)

    @Argument(
        help: ArgumentHelp("The limit: \(DurationText.help).", valueName: "duration"),
        transform: { text throws(UsageError) in
            try DurationText.positive(text, what: "the limit")
        })
    var limit: Duration

    @Option(
        help: ArgumentHelp("The signal sent at the limit: a name (TERM, INT, HUP, QUIT, KILL, USR1, USR2, ALRM) or a number.", valueName: "signal"),
        transform: { text throws(UsageError) in try SignalName.parse(text) })
    var signal: Int32 = SIGTERM

    @Option(
        help: ArgumentHelp("Kill the command (KILL) if it is still running this long after the signal.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--kill-after") })
    var killAfter: Duration?

    @Option(help: "The clock: continuous keeps counting while the machine sleeps, suspending does not.")
    var clock: ClockChoice = .continuous

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command to run, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        if command.isEmpty { throw ValidationError("missing command after --, as in: timerkit timeout 10s -- sleep 60") }
    }

    func run() throws {
        let status = try TimeoutRun(limit: limit, signal: signal, killAfter: killAfter, clock: clock.clock, command: command).run()
        if status != 0 { throw ExitCode(status) }
    }
}
