import ArgumentParser
import Foundation
import TimerKit

/// `timerkit countdown DURATION|TIME [--label TEXT]`.
struct CountdownCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "countdown",
        abstract: "A live countdown to a duration from now or to a time.",
        usage: "timerkit countdown <duration|time> [<options>] [-- <command> ...]",
        discussion: """
            On a terminal: one line redrawn in place with a progress bar; p or space pauses and \
            resumes (exactly: the remaining time is frozen to the nanosecond), q or Ctrl-C quits and \
            restores the terminal. Otherwise one plain line per second, no escape codes. Colour only \
            on a terminal and never when NO_COLOR is set. The value shown is the remaining time \
            rounded up, and changes exactly when a second of it passes; a countdown to a duration runs \
            on the continuous clock (it counts the machine's sleep), one to a time on the wall clock. \
            At zero the line says "done" and the terminal bell rings (not with --quiet, never into a \
            pipe). Ctrl-Z gives the terminal back and stops; fg resumes (the countdown kept counting). \
            A command after -- runs at zero (never on q or Ctrl-C), and its status becomes timerkit's.
            Exit status: 0 at zero (the command's with --), 130 on Ctrl-C or q.

            Examples: timerkit countdown 25m --label Tea -- notify-send "Tea is ready"
                      timerkit countdown 20:00 --label "Sale ends"    timerkit countdown 1m 30s
            """)

    /// Several words (`1m 30s`, `tomorrow 9am`) arrive here as one: ``TimerKitCommand/joiningWords(_:)``.
    @Argument(help: ArgumentHelp("How long (\(DurationText.help)), or until when (\(TimeText.help)).", valueName: "duration|time"))
    var target: String

    @Option(help: "A label shown beside the remaining time.")
    var label: String?

    @Flag(help: "No bell at zero.")
    var quiet = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("A command to run at zero, after --.", valueName: "command"))
    var command: [String] = []

    /// The deadline and its clock, from the argument.
    func resolvedTarget(now: Date = Date()) throws -> (TimerStart, TimerClock, String?) {
        do {
            if TimeText.looksLikeTime(target) {
                let time = try TimeText.resolve(target, now: now)
                let note =
                    time.movedToTomorrow ? "timerkit countdown: \(target) has passed today; counting down to tomorrow, \(TimeText.describe(time.date))" : nil
                return (.date(time.date), .wall, note)
            }
            return (.after(try DurationText.positive(target, what: "the countdown")), .continuous, nil)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func validate() throws {
        _ = try resolvedTarget()
    }

    func run() throws {
        let (start, clock, note) = try resolvedTarget()
        if let note { Output.error(note) }
        try ChildProcess.checkBeforeWaiting(command, tool: "countdown")
        let status = try CountdownRun(to: start, clock: clock, label: label, bell: !quiet, then: command).run()
        if status != 0 { throw ExitCode(status) }
    }
}
