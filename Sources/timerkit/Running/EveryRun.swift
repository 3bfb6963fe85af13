import Dispatch
import Foundation
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `timerkit every`: runs a command on a repeating timer's grid, start to start, or at a calendar
/// schedule's occurrences (`--at`, `--on`, `--cron`), one run at a time, until a count, a time limit, a failure
/// (`--fail-fast`) or a signal ends it.
///
/// The runs are the timer's handler on a serial queue of their own, so a run that overruns makes
/// the timer miss deadlines and its missed-deadline policy decides (C5): `burst` runs the missed
/// ones back to back, `coalesce` runs once for all of them at once, and `skip` — the default —
/// waits for the next grid deadline: a deadline that came while the previous run was still going
/// gets no run of its own. Whatever got no run is counted in the summary.
///
/// On a calendar schedule, each occurrence is a one-shot on the wall clock (so it follows changes of
/// the system clock, and daylight-saving days as the rule says), armed when the previous run has
/// ended: occurrences that passed during a run are skipped and counted.
final class EveryRun: Sendable {
    struct Options: Sendable {
        /// The grid's interval; unused with a calendar schedule.
        var interval: Duration
        /// Runs at the schedule's occurrences instead of on a grid (the clock is then the wall clock).
        var calendar: CalendarSchedule? = nil
        var count: Int?
        var limit: Duration?
        var tolerance: Duration
        var missed: MissedChoice
        var clock: TimerClock
        var failFast: Bool
        var json: Bool
        /// How long one run may take: then it gets TERM, and KILL after the grace period.
        var runTimeout: Duration? = nil
        var command: [String]
    }

    /// Why the runs ended.
    enum Ending: Sendable, Equatable {
        case countReached
        case timeUp
        case failed(Int32)
        case cannotLaunch(Int32)
        case signal(Int32)
    }

    private struct State {
        var summary = RunSummary()
        var ending: Ending?
        var timer: ScheduledTimer?
        var child: ChildProcess?
        /// Whether the run under way reached `--timeout`.
        var runTimedOut = false
        /// When the previous run ended, on the timer's clock.
        var previousEnd = Int64.min
    }

    private let options: Options
    private let intervalNanoseconds: Int64
    private let queue = DispatchQueue(label: "timerkit.every.runs")
    /// Where a run's `--timeout` fires: the runs' queue is busy waiting for the run.
    private let timeoutQueue = DispatchQueue(label: "timerkit.every.timeouts")
    private let state = Locked(State())
    private let finished = DispatchSemaphore(value: 0)

    init(_ options: Options) {
        self.options = options
        intervalNanoseconds = DurationText.wholeNanoseconds(options.interval)
        wallOffset = Int64((Date().timeIntervalSince1970 * 1e9).rounded()) - options.clock.now.nanoseconds
    }

    /// Runs until the end; prints the summary on stderr and returns the exit status.
    func run() throws -> Int32 {
        SignalRelay.install { [self] signal in interrupt(signal) }
        let clock = options.clock
        let started = clock.now.nanoseconds
        if let rule = options.calendar {
            try armOccurrence(of: rule, after: Date())
        } else {
            let timer = try ScheduledTimer.repeating(
                every: options.interval, first: .now, tolerance: options.tolerance, clock: clock,
                missedDeadlines: options.missed.policy, delivery: .queue(queue)
            ) { [self] _, fire in self.fire(fire) }
            install(timer)
        }
        let limit = try options.limit.map { (limit) throws(TimerError) in
            try ScheduledTimer.once(at: .after(limit), clock: clock) { [self] _, _ in stop(.timeUp) }
        }
        finished.wait()
        limit?.invalidate()
        let (summary, ending) = state.withLock { state in
            state.summary.elapsed = clock.now.nanoseconds - started
            return (state.summary, state.ending)
        }
        // After Ctrl-C the terminal shows "^C" with no newline: start the summary on a line of its own.
        if case .signal = ending, Terminal.isErrorTerminal { Output.error("") }
        Output.error(summary.text(policy: options.missed))
        switch ending {
        case .countReached, .timeUp, nil: return 0
        case .failed(let status), .cannotLaunch(let status): return status
        case .signal(let signal): return 128 + signal
        }
    }

    /// Makes `timer` the one that `stop` ends; ends it at once if a signal has ended the runs.
    private func install(_ timer: ScheduledTimer) {
        let installed = state.withLock { state -> Bool in
            guard state.ending == nil else { return false }
            state.timer = timer
            return true
        }
        if !installed { timer.invalidate() }
    }

    /// Arms a one-shot on the wall clock for the schedule's first occurrence after `date`.
    private func armOccurrence(of rule: CalendarSchedule, after date: Date) throws {
        guard let next = rule.nextOccurrence(after: date) else {
            Output.error("timerkit every: no next occurrence of \(rule) (its time zone is unknown here, or it has ended)")
            return stop(.countReached)
        }
        install(
            try ScheduledTimer.once(at: .date(next), clock: .wall, delivery: .queue(queue)) { [self] _, fire in
                self.fire(fire)
            })
    }

    /// After a run on a calendar schedule: the occurrences that passed while it ran are skipped, and
    /// the next one is armed.
    private func armNext(of rule: CalendarSchedule, after deadline: Int64) {
        let now = Date()
        let (occurrence, skipped) = rule.catchUp(from: Date(timeIntervalSince1970: Double(deadline) / 1e9), to: now)
        let stillRunning = state.withLock { state -> Bool in
            state.summary.skipped += skipped
            return state.ending == nil
        }
        guard stillRunning else { return }
        do {
            try armOccurrence(of: rule, after: max(now, occurrence))
        } catch {
            Output.error("timerkit every: \(error)")
            stop(.countReached)
        }
    }

    /// One fire of the timer: runs the command once, unless the runs are over or (under skip) the
    /// deadline came while the previous run was still going.
    private func fire(_ fire: TimerFire) {
        let latest = fire.scheduledDeadline.nanoseconds + Int64(max(fire.deadlineCount - 1, 0)) * intervalNanoseconds
        let number = state.withLock { state -> Int? in
            guard state.ending == nil else { return nil }
            state.summary.skipped += fire.skippedDeadlineCount
            if options.missed == .skip && latest <= state.previousEnd {
                state.summary.skipped += fire.deadlineCount
                return nil
            }
            state.summary.coalesced += max(fire.deadlineCount - 1, 0)
            return state.summary.runs.count + 1
        }
        guard let number else { return }
        let start = options.clock.now.nanoseconds
        // Started under the lock, so that a signal sees either no command (and none starts: the
        // runs are over) or the command's process, to pass the signal on to.
        let launched = state.withLock { state -> Result<ChildProcess, ChildProcess.LaunchError>? in
            guard state.ending == nil else { return nil }
            let result = Result { () throws(ChildProcess.LaunchError) in
                try ChildProcess.launch(options.command, outputToStandardError: options.json)
            }
            if case .success(let child) = result { state.child = child }
            return result
        }
        let child: ChildProcess
        switch launched {
        case nil: return
        case .failure(let error):
            Output.error("timerkit every: \(error)")
            return stop(.cannotLaunch(error.exitStatus))
        case .success(let launchedChild): child = launchedChild
        }
        let limit = options.runTimeout.flatMap { timeout in
            try? ScheduledTimer.once(at: .after(timeout), clock: options.clock, delivery: .queue(timeoutQueue)) { [self] _, _ in
                timeOut(child)
            }
        }
        let termination = child.wait()
        limit?.invalidate()
        let end = options.clock.now.nanoseconds
        let timedOut = state.withLock { state in
            defer { state.runTimedOut = false }
            return state.runTimedOut
        }
        // A run stopped at --timeout has GNU timeout's status, 124.
        let status = timedOut ? 124 : termination.status
        let record = RunRecord(number: number, deadline: latest, start: start, duration: end - start, status: status)
        if options.json { Output.line(record.json(wallOffset: wallOffset)) }
        if timedOut { Output.error("timerkit every: run \(number) timed out after \(DurationText.describe(options.runTimeout ?? .zero))") }
        let ending = state.withLock { state -> Ending? in
            state.child = nil
            state.previousEnd = end
            state.summary.runs.append(record)
            if timedOut { state.summary.timedOut += 1 }
            // A signal ended the runs while this one ran: it was passed on to the command.
            if case .signal = state.ending { state.summary.interrupted = number }
            // Ctrl-C (or Ctrl-\) at the terminal reached only the command, which had the terminal:
            // it was meant for the runs too.
            if child.wasInterruptedAtTerminal(termination), case .signaled(let signal) = termination {
                state.summary.interrupted = number
                return .signal(signal)
            }
            if options.failFast && status != 0 { return .failed(status) }
            if let count = options.count, number >= count { return .countReached }
            return nil
        }
        if let ending { return stop(ending) }
        if let rule = options.calendar { armNext(of: rule, after: latest) }
    }

    /// `--timeout` came while `child` was still running: TERM to it (and all it started), KILL
    /// after the grace period if it is still running.
    private func timeOut(_ child: ChildProcess) {
        let running = state.withLock { state -> Bool in
            guard state.child?.pid == child.pid else { return false }
            state.runTimedOut = true
            return true
        }
        guard running else { return }
        child.forward(SIGTERM, repeated: false) { [self] in state.withLock { $0.child?.pid == child.pid } }
    }

    /// Ends the runs (the first reason wins): no new run starts, and once the one under way (if
    /// any) has returned, `run()` prints the summary.
    private func stop(_ ending: Ending) {
        let (first, timer) = state.withLock { Self.record(ending, &$0) }
        if first { stopped(timer) }
    }

    /// Records the ending if it is the first; returns whether it was, and the timer to invalidate.
    private static func record(_ ending: Ending, _ state: inout State) -> (first: Bool, timer: ScheduledTimer?) {
        guard state.ending == nil else { return (false, nil) }
        state.ending = ending
        defer { state.timer = nil }
        return (true, state.timer)
    }

    /// After the first ending: no new run; once the run under way (if any) has returned, `run()`
    /// prints the summary.
    private func stopped(_ timer: ScheduledTimer?) {
        timer?.invalidate()
        // After the run under way: the runs' queue is serial.
        queue.async { self.finished.signal() }
    }

    /// SIGINT, SIGTERM or SIGHUP: stop, pass the signal on to a running command, and kill it if it
    /// is still running after the grace period. A second signal kills it at once.
    private func interrupt(_ signal: Int32) {
        // The command under way and the ending in one step: a command that is starting is either
        // seen here, or sees the ending and does not start (see `fire(_:)`).
        let (child, again, first, timer) = state.withLock { state -> (ChildProcess?, Bool, Bool, ScheduledTimer?) in
            let again = state.ending != nil
            let (first, timer) = Self.record(.signal(signal), &state)
            return (state.child, again, first, timer)
        }
        if first { stopped(timer) }
        guard let child else { return }
        child.forward(signal, repeated: again) { [self] in state.withLock { $0.child?.pid == child.pid } }
    }

    /// Nanoseconds since 1970 minus the clock's reading, for `--json`: read once, so that the
    /// deadlines printed lie exactly on the grid.
    private let wallOffset: Int64
}
