import ArgumentParser
import Foundation
import TimerKit

/// `timerkit at TIME -- COMMAND…`.
struct AtCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "at",
        abstract: "Run a command once, at a time of day or a date; its exit status becomes timerkit's.",
        usage: "timerkit at <time> [--dry-run] -- <command> [<argument> ...]",
        discussion: """
            Times: 09:30, 09:30:15, 9am, 9:30pm, today 18:00, tomorrow 9am, +5m (from now), \
            2026-11-23T20:00 or with an offset, 2026-11-23T20:00+01:00.

            The time is on the wall clock and follows changes to it: if the system clock is set \
            forward or back while waiting, the command still runs when the wall clock reads the \
            time. A time of day that has passed today means tomorrow (said on stderr). Ctrl-C while \
            waiting exits 130 without running the command.

            Examples: timerkit at 09:30 -- say "stand-up"    timerkit at tomorrow 9am -- make deploy
            """)

    /// Several words (`tomorrow 09:00`) arrive here as one: ``TimerKitCommand/joiningWords(_:)``.
    @Argument(help: ArgumentHelp("When: \(TimeText.help).", valueName: "time"))
    var time: String

    @Flag(help: "Print when the command would run, and exit.")
    var dryRun = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command to run, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        do {
            _ = try TimeText.resolve(time, now: Date())
        } catch {
            throw ValidationError(error.message)
        }
        if command.isEmpty && !dryRun { throw ValidationError("missing command after --, as in: timerkit at 09:30 -- date") }
    }

    func run() throws {
        let target: TimeText
        do {
            target = try TimeText.resolve(time, now: Date())
        } catch {
            throw ValidationError(error.message)
        }
        if target.movedToTomorrow { Output.error("timerkit at: \(time) has passed today; waiting until tomorrow, \(TimeText.describe(target.date))") }
        if dryRun {
            Output.line("timerkit at \(time): would run at \(TimeText.describe(target.date))")
            return
        }
        try ChildProcess.checkBeforeWaiting(command, tool: "at")
        let status = try OneShotRun(name: "at", at: .date(target.date), clock: .wall, command: command).run()
        if status != 0 { throw ExitCode(status) }
    }
}
