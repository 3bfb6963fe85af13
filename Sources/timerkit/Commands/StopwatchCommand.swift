import ArgumentParser
import Foundation
import TimerKit

/// `timerkit stopwatch [--label TEXT]`.
struct StopwatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stopwatch",
        abstract: "A live stopwatch: count up, laps, pause.",
        usage: "timerkit stopwatch [--label <text>]",
        discussion: """
            On a terminal: one line redrawn in place, to the tenth of a second; l or Enter takes a \
            lap (printed above the line: its time and the total), p or space pauses and resumes \
            (exactly: the time is frozen to the nanosecond), q stops and prints the total. \
            Otherwise one plain line per second (0:01, 0:02, …). The time is counted on the continuous clock (it \
            counts the machine's sleep). Ctrl-Z gives the terminal back and stops; fg resumes (the \
            stopwatch kept counting unless paused).
            Exit status: 0 on q, 130 on Ctrl-C (the total is printed either way).

            Example: timerkit stopwatch --label "Deploy"
            """)

    @Option(help: "A label shown beside the time.")
    var label: String?

    func run() throws {
        let status = try StopwatchRun(label: label).run()
        if status != 0 { throw ExitCode(status) }
    }
}
