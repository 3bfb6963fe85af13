import ArgumentParser
import Foundation
import TimerKit

/// `timerkit after DURATION -- COMMAND…`.
struct AfterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "after",
        abstract: "Run a command once, after a delay; its exit status becomes timerkit's.",
        usage: "timerkit after <duration> [<options>] -- <command> [<argument> ...]",
        discussion: """
            The delay is counted on the continuous clock by default, so it includes time the machine \
            spends asleep (`sleep` on Linux does not). Ctrl-C while waiting exits 130 without running \
            the command; while the command runs, the signal is passed on to it.

            Example: timerkit after 25m -- notify-send "Tea is ready"
            """)

    /// Several words (`1m 30s`) arrive here as one: ``TimerKitCommand/joiningWords(_:)``.
    @Argument(
        help: ArgumentHelp("The delay: \(DurationText.help); several words add up, as in 1m 30s.", valueName: "duration"),
        transform: { text throws(UsageError) in
            try DurationText.duration(text)
        })
    var delay: Duration

    @Option(help: "The clock: continuous keeps counting while the machine sleeps, suspending does not.")
    var clock: ClockChoice = .continuous

    @Flag(help: "Print when the command would run, and exit.")
    var dryRun = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command to run, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        if command.isEmpty && !dryRun { throw ValidationError("missing command after --, as in: timerkit after 2s -- echo hi") }
    }

    func run() throws {
        if dryRun {
            let at = Date().addingTimeInterval(Double(DurationText.wholeNanoseconds(delay)) / 1e9)
            Output.line("timerkit after \(DurationText.describe(delay)): would run at \(TimeText.describe(at))")
            return
        }
        try ChildProcess.checkBeforeWaiting(command, tool: "after")
        let status = try OneShotRun(name: "after", at: .after(delay), clock: clock.clock, command: command).run()
        if status != 0 { throw ExitCode(status) }
    }
}
