import ArgumentParser
import Foundation
import TimerKit

/// `timerkit every INTERVAL [options] -- COMMAND [ARGS…]`.
struct EveryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "every",
        abstract: "Run a command on a fixed grid, start to start: no drift, never two runs at once.",
        usage: "timerkit every <interval> [<options>] -- <command> [<argument> ...]",
        discussion: """
            The first run starts at once, run k at start + k·interval, whatever the runs take (unlike \
            `watch -n`, which waits the interval after each run and drifts). A run that overruns its \
            interval makes the timer miss deadlines; --missed decides: skip (the default) waits for \
            the next grid deadline, coalesce runs once at once for all it missed, burst runs every \
            missed one back to back. On exit (count reached, --for elapsed, Ctrl-C) a summary goes to \
            stderr: runs, deadlines skipped or coalesced, start lateness p50/p99/max, failures.

            Example: timerkit every 200ms --count 10 -- date +%T
            """)

    @Argument(help: ArgumentHelp("How often: \(DurationText.help).", valueName: "interval"), transform: { text throws(UsageError) in
        try DurationText.positive(text, what: "the interval")
    })
    var interval: Duration

    @Option(help: ArgumentHelp("Stop after this many runs.", valueName: "n"))
    var count: Int?

    @Option(name: .customLong("for"), help: ArgumentHelp("Stop starting runs after this long.", valueName: "duration"), transform: { text throws(UsageError) in
        try DurationText.positive(text, what: "--for")
    })
    var limit: Duration?

    @Option(help: ArgumentHelp("How late a run may start so that wake-ups can be shared: \(ToleranceText.help); 0 by default.", valueName: "duration|percent"), transform: { text throws(UsageError) in
        try ToleranceText.parse(text)
    })
    var tolerance: ToleranceText?

    @Option(help: "What to do about deadlines missed while a run overran.")
    var missed: MissedChoice = .skip

    @Option(help: "The clock: continuous keeps counting while the machine sleeps, suspending does not.")
    var clock: ClockChoice = .continuous

    @Flag(help: "Stop at the first failing run, and exit with its status.")
    var failFast = false

    @Flag(help: "Print when the next runs would start, and exit.")
    var dryRun = false

    @Flag(help: "Print one JSON object per run on stdout (deadline, start, lateness, exit status, duration); the command's own output goes to stderr.")
    var json = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command to run, after --.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1, got \(count)") }
        // As a percentage, more than 100 % is refused; as a duration, more than the interval is too.
        if case .duration(let duration) = tolerance, duration > interval {
            throw ValidationError("--tolerance \(DurationText.describe(duration)) is more than the interval (\(DurationText.describe(interval))): runs would start after the next one is due")
        }
        if command.isEmpty && !dryRun { throw ValidationError("missing command after --, as in: timerkit every 1s -- date") }
    }

    func run() throws {
        let toleranceValue = tolerance?.resolved(interval: interval) ?? .zero
        if dryRun {
            let shown = min(count ?? 5, 10)
            let start = Date()
            let step = DurationText.wholeNanoseconds(interval)
            // Offsets past the tool's longest duration (100 years) are not shown, nor past --for.
            let offsets = (0..<Int64(shown)).compactMap { k -> Int64? in
                let (offset, overflow) = step.multipliedReportingOverflow(by: k)
                guard !overflow, offset <= DurationText.maximumNanoseconds else { return nil }
                return limit.map { offset < DurationText.wholeNanoseconds($0) } ?? true ? offset : nil
            }
            Output.line("timerkit every \(DurationText.describe(interval)): the first \(offsets.count) run\(offsets.count == 1 ? "" : "s") would start at")
            for offset in offsets {
                Output.line("  \(TimeText.describe(start.addingTimeInterval(Double(offset) / 1e9)))  (+\(DurationText.describe(.nanoseconds(offset))))")
            }
            if count == nil && limit == nil { Output.line("  … and every \(DurationText.describe(interval)) after that, until Ctrl-C") }
            return
        }
        try ChildProcess.checkBeforeWaiting(command, tool: "every")
        let runner = EveryRun(EveryRun.Options(
            interval: interval, count: count, limit: limit, tolerance: toleranceValue, missed: missed,
            clock: clock.clock, failFast: failFast, json: json, command: command))
        let status = try runner.run()
        if status != 0 { throw ExitCode(status) }
    }
}
