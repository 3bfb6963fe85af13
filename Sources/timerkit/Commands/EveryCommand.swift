import ArgumentParser
import Foundation
import TimerKit

/// `timerkit every INTERVAL [options] -- COMMAND [ARGS…]`.
struct EveryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "every",
        abstract: "Run a command on a fixed grid, start to start: no drift, never two runs at once.",
        usage: """
            timerkit every <interval> [<options>] -- <command> [<argument> ...]
            timerkit every (--at <time> | --on <days time>) [<options>] -- <command>
            timerkit every --cron <expression> [<options>] -- <command>
            timerkit every … --shell <command line>
            """,
        discussion: """
            The first run starts at once, run k at start + k·interval, whatever the runs take (unlike \
            `watch -n`, which waits the interval after each run and drifts). A run that overruns its \
            interval makes the timer miss deadlines; --missed decides: skip (the default) waits for \
            the next grid deadline, coalesce runs once at once for all it missed, burst runs every \
            missed one back to back. On exit (count reached, --for elapsed, Ctrl-C) a summary goes to \
            stderr: runs, deadlines skipped or coalesced, start lateness p50/p99/max, failures. \
            --timeout stops a run that takes too long (TERM, then KILL after 2 s), so that one hung \
            run cannot hold up the grid; it counts as a failure with status 124.

            --at and --on run on the calendar instead of a grid, on the wall clock in the local time \
            zone (TZ): --at 09:00 every day, --on "mon..fri 09:00" on those days (days: mon..sun, \
            ranges, lists such as mon,wed,fri, weekdays, weekends, daily). A time that does not \
            exist on a daylight-saving day runs once, shifted by the gap; one that happens twice runs \
            once, the first time. Occurrences that pass while a run is still going are skipped.

            --cron takes a cron expression: minute hour day-of-month month day-of-week, with \
            lists, ranges, steps and names (*/15 9-17 * * mon-fri), an optional leading seconds \
            field, @hourly/@daily/@weekly/@monthly/@yearly, L (last day; 5L the last Friday), 15W \
            (the weekday nearest the 15th), 1#2 (the second Monday), and CRON_TZ=Zone in front for \
            another zone. With both day fields restricted either one matching is enough, as in \
            cron. A schedule that runs every hour follows elapsed time across a daylight-saving \
            change (no run twice at once, no two-hour gap). --dry-run lists the next --count runs \
            (5 by default) from now or from --from, to check a rule across next spring's change.

            Examples: timerkit every 200ms --count 10 -- date +%T
                      timerkit every --on "mon..fri 09:00" -- notify-send "Stand-up"
                      timerkit every --cron "*/15 9-17 * * mon-fri" -- ./sync.sh
                      timerkit every --cron "0 2 * * *" --dry-run --count 3 --from 2027-03-13
                      timerkit every 2s --shell 'df -h / | tail -1'     (for watch -n 2 users)
            """)

    @Argument(
        help: ArgumentHelp("How often: \(DurationText.help).", valueName: "interval"),
        transform: { text throws(UsageError) in
            try DurationText.positive(text, what: "the interval")
        })
    var interval: Duration?

    @Option(help: ArgumentHelp("Every day at this time (HH:MM or HH:MM:SS, local time) instead of an interval.", valueName: "time"))
    var at: String?

    @Option(help: ArgumentHelp("On these days at this time, as in \"mon..fri 09:00\" (local time), instead of an interval.", valueName: "days time"))
    var on: String?

    @Option(
        help: ArgumentHelp(
            "On a cron expression, as in \"*/15 9-17 * * mon-fri\" (local time, or CRON_TZ=Zone first), instead of an interval.",
            valueName: "expression"))
    var cron: String?

    @Option(
        help: ArgumentHelp("With --dry-run: list the runs from this date instead of now (\(TimeText.help), or a date such as 2027-03-13).", valueName: "date"))
    var from: String?

    @Option(help: ArgumentHelp("Stop after this many runs (with --dry-run: list this many).", valueName: "n"))
    var count: Int?

    @Option(
        name: .customLong("for"), help: ArgumentHelp("Stop starting runs after this long.", valueName: "duration"),
        transform: { text throws(UsageError) in
            try DurationText.positive(text, what: "--for")
        })
    var limit: Duration?

    @Option(
        help: ArgumentHelp("How late a run may start so that wake-ups can be shared: \(ToleranceText.help); 0 by default.", valueName: "duration|percent"),
        transform: { text throws(UsageError) in
            try ToleranceText.parse(text)
        })
    var tolerance: ToleranceText?

    @Option(
        help: ArgumentHelp("Stop a run that is still going after this long (TERM, KILL 2 s later); it counts as failed, status 124.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--timeout") })
    var timeout: Duration?

    @Option(help: ArgumentHelp("A command line for /bin/sh -c, instead of a command after --.", valueName: "command line"))
    var shell: String?

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

    /// The calendar schedule of `--cron`, `--at` or `--on`, in the local time zone (or the
    /// expression's `CRON_TZ=`).
    func calendarSchedule() throws -> CalendarSchedule? {
        do {
            if let cron { return try CalendarSchedule(cron: cron, in: .current) }
            guard let text = on ?? at.map({ "daily \($0)" }) else { return nil }
            if at != nil, at?.contains(" ") == true {
                throw ValidationError("--at takes a time of day such as 09:00; for days use --on \"mon..fri 09:00\"")
            }
            return CalendarSchedule(try calendarRule(text))
        } catch let error as TimerError {
            throw ValidationError(error.description)
        }
    }

    private func calendarRule(_ text: String) throws(TimerError) -> CalendarRule { try CalendarRule(text, in: .current) }

    /// How --dry-run names the schedule: a rule as `--on` reads it, a cron schedule as its text.
    private func title(of schedule: CalendarSchedule) -> String {
        guard cron == nil, let text = on ?? at.map({ "daily \($0)" }), let rule = try? calendarRule(text) else { return schedule.description }
        return rule.description
    }

    /// Where `--dry-run` starts listing: `--from` (a date, in the past too, read in `zone` — the
    /// schedule's), or now.
    func dryRunStart(in zone: TimeZone = .current) throws -> Date {
        guard var text = from.map({ String($0.trimmingWhitespace) }) else { return Date() }
        // A bare date is its midnight.
        if text.count == 10, text.dropFirst(4).first == "-" { text += "T00:00" }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        if let date = TimeText.isoDate(text, calendar: calendar) { return date }
        do {
            return try TimeText.resolve(text, now: Date(), calendar: calendar).date
        } catch {
            throw ValidationError("--from: \(error)")
        }
    }

    func validate() throws {
        let schedules = [interval != nil, at != nil, on != nil, cron != nil].filter { $0 }.count
        if schedules == 0 {
            throw ValidationError("missing interval, as in: timerkit every 1s -- date (or --at 09:00, --on \"mon..fri 09:00\", --cron \"*/15 * * * *\")")
        }
        if schedules > 1 { throw ValidationError("give one of an interval, --at, --on and --cron") }
        if try calendarSchedule() != nil {
            if tolerance != nil || gridOptionsGiven {
                throw ValidationError("--tolerance, --missed and --clock are for an interval; --at, --on and --cron run on the wall clock")
            }
        }
        if from != nil {
            guard dryRun else { throw ValidationError("--from is for --dry-run: it lists the runs from that date") }
            _ = try dryRunStart(in: try calendarSchedule()?.timeZone ?? .current)
        }
        if dryRun, let count, count > 10_000 { throw ValidationError("--dry-run lists at most 10,000 runs, got --count \(count)") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1, got \(count)") }
        // As a percentage, more than 100 % is refused; as a duration, more than the interval is too.
        if case .duration(let duration) = tolerance, let interval, duration > interval {
            throw ValidationError(
                "--tolerance \(DurationText.describe(duration)) is more than the interval (\(DurationText.describe(interval))): runs would start after the next one is due"
            )
        }
        if shell != nil && !command.isEmpty { throw ValidationError("--shell and a command after -- cannot both be given: choose one") }
        if shell?.trimmingWhitespace.isEmpty == true {
            throw ValidationError("--shell needs a command line, as in: timerkit every 2s --shell 'df -h | head -1'")
        }
        if command.isEmpty && shell == nil && !dryRun { throw ValidationError("missing command after --, as in: timerkit every 1s -- date") }
    }

    /// The command to run: the one after --, or the shell running `--shell`'s command line.
    var resolvedCommand: [String] { shell.map { ["/bin/sh", "-c", $0] } ?? command }

    /// Whether --missed or --clock were given (they mean nothing on the calendar).
    private var gridOptionsGiven: Bool { missed != .skip || clock != .continuous }

    func run() throws {
        if let schedule = try calendarSchedule() {
            guard !dryRun else { return try printDryRun(occurrencesOf: schedule) }
            return try startRuns(interval: .seconds(1), calendar: schedule, tolerance: .zero, missed: .skip, clock: .wall)
        }
        guard let interval else { return }
        guard !dryRun else { return try printDryRun(every: interval) }
        try startRuns(
            interval: interval, calendar: nil, tolerance: tolerance?.resolved(interval: interval) ?? .zero, missed: missed, clock: clock.clock)
    }

    /// Looks the command up, runs it on the schedule until the runs end, and exits with their status.
    private func startRuns(interval: Duration, calendar: CalendarSchedule?, tolerance: Duration, missed: MissedChoice, clock: TimerClock) throws {
        let command = resolvedCommand
        try ChildProcess.checkBeforeWaiting(command, tool: "every")
        let runner = EveryRun(
            EveryRun.Options(
                interval: interval, calendar: calendar, count: count, limit: limit, tolerance: tolerance, missed: missed,
                clock: clock, failFast: failFast, json: json, runTimeout: timeout, command: command))
        let status = try runner.run()
        if status != 0 { throw ExitCode(status) }
    }

    /// --dry-run on a grid: the first runs' instants and offsets (none past 100 years or --for).
    private func printDryRun(every interval: Duration) throws {
        let start = try dryRunStart()
        let step = DurationText.wholeNanoseconds(interval)
        let offsets = (0..<Int64(dryRunCount)).compactMap { k -> Int64? in
            let (offset, overflow) = step.multipliedReportingOverflow(by: k)
            guard !overflow, offset <= DurationText.maximumNanoseconds else { return nil }
            return limit.map { offset < DurationText.wholeNanoseconds($0) } ?? true ? offset : nil
        }
        printDryRun(
            "\(DurationText.describe(interval)): the first",
            offsets.map { "\(TimeText.describe(start.addingTimeInterval(Double($0) / 1e9)))  (+\(DurationText.describe(.nanoseconds($0))))" },
            then: "and every \(DurationText.describe(interval)) after that")
    }

    /// --dry-run on the calendar: the next occurrences (none past --for), with their weekday and
    /// offset on the schedule's wall clock.
    private func printDryRun(occurrencesOf schedule: CalendarSchedule) throws {
        var occurrences: [Date] = []
        var after = try dryRunStart(in: schedule.timeZone ?? .current)
        let end = limit.map { after.addingTimeInterval(Double(DurationText.wholeNanoseconds($0)) / 1e9) }
        while occurrences.count < dryRunCount, let next = schedule.nextOccurrence(after: after), end.map({ next < $0 }) ?? true {
            occurrences.append(next)
            after = next
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = schedule.timeZone ?? .current
        printDryRun("\(title(of: schedule)): the next", occurrences.map { TimeText.describeWithWeekday($0, calendar: calendar) }, then: "and so on")
    }

    /// How many runs --dry-run lists: --count, or 5.
    private var dryRunCount: Int { count ?? 5 }

    /// --dry-run's listing: which runs, one line each, and how it goes on without --count or --for.
    private func printDryRun(_ which: String, _ lines: [String], then more: String) {
        Output.line("timerkit every \(which) \(lines.count) run\(lines.count == 1 ? "" : "s") would start at")
        for line in lines { Output.line("  \(line)") }
        if count == nil && limit == nil { Output.line("  … \(more), until Ctrl-C") }
    }
}
