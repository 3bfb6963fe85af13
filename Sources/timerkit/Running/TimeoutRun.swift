import Dispatch
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `timerkit timeout`: starts the command at once, sends it a signal at the limit (a one-shot on
/// the clock), and KILL after `killAfter` if it is still running; takes GNU timeout's exit
/// statuses. Signals to `timerkit` meanwhile are passed on to the command. Every signal goes to the
/// command's process group (``ChildProcess/send(_:)``): what the command started stops with it —
/// except with `foreground`, where the command stays in `timerkit`'s group and gets the signals
/// alone, as with GNU `timeout --foreground`.
final class TimeoutRun: Sendable {
    /// What `timerkit timeout` was asked, as GNU `timeout`'s options.
    struct Options: Sendable {
        /// The limit; zero: none (the command runs as long as it takes).
        var limit: Duration
        var signal: Int32 = SIGTERM
        /// KILL this long after the first signal if the command still runs; nil or zero: never.
        var killAfter: Duration?
        /// The command's status even when the limit came, instead of 124.
        var preserveStatus = false
        /// The command in `timerkit`'s process group, signalled alone, the terminal left alone.
        var foreground = false
        /// Each signal sent, said on stderr.
        var verbose = false
        var clock: TimerClock = .continuous
    }

    private struct State {
        var child: ChildProcess?
        var timedOut = false
        /// Whether the KILL after `killAfter` is scheduled: by the first signal only, as GNU does.
        var killScheduled = false
        var timers: [ScheduledTimer] = []
    }

    private let options: Options
    private let command: [String]
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "timerkit.timeout")

    init(_ options: Options, command: [String]) {
        self.options = options
        self.command = command
    }

    /// Runs the command; returns ``status(of:timedOut:preserveStatus:)`` of how it ended, or 125 if
    /// the limit could not be set.
    func run() -> Int32 {
        SignalRelay.install { [self] signal in send(signal, atLimit: false) }
        let child: ChildProcess
        do {
            // Started under the lock, so that a signal sees the command's process.
            child = try state.withLock { (state) throws(ChildProcess.LaunchError) -> ChildProcess in
                let child = try ChildProcess.launch(command, ownGroup: !options.foreground)
                state.child = child
                return child
            }
        } catch {
            Output.error("timerkit timeout: \(error)")
            return error.exitStatus
        }
        if options.limit > .zero {
            do {
                let atLimit = try ScheduledTimer.once(at: .after(options.limit), clock: options.clock, delivery: .queue(queue)) { [self] _, _ in
                    send(options.signal, atLimit: true)
                }
                state.withLock { $0.timers.append(atLimit) }
            } catch {
                // GNU timeout's own failure (125): the command must not run without its limit.
                Output.error("timerkit timeout: cannot set the limit: \(error)")
                child.send(SIGKILL)
                _ = child.wait()
                return 125
            }
        }
        let termination = child.wait()
        let (timedOut, timers) = state.withLock { state in
            state.child = nil
            defer { state.timers = [] }
            return (state.timedOut, state.timers)
        }
        for timer in timers { timer.invalidate() }
        return Self.status(of: termination, timedOut: timedOut, preserveStatus: options.preserveStatus)
    }

    /// GNU timeout's exit status: the command's own if the limit did not come; else 124, or the
    /// command's with `preserveStatus` (128 + n if signal n ended it); 137 if KILL ended it after
    /// the limit, with or without `preserveStatus`.
    static func status(of termination: ChildProcess.Termination, timedOut: Bool, preserveStatus: Bool) -> Int32 {
        guard timedOut else { return termination.status }
        if termination == .signaled(SIGKILL) { return 128 + SIGKILL }
        return preserveStatus ? termination.status : 124
    }

    /// Sends `signal` to the command — at the limit, passed on (SIGINT, SIGTERM or SIGHUP to
    /// `timerkit`), or KILL after `killAfter` — as GNU timeout's handler does: says so with
    /// `verbose`; continues a stopped command (not with `foreground`); the first signal schedules
    /// the KILL. Ignored once the command has ended.
    private func send(_ signal: Int32, atLimit: Bool) {
        let killAfter = options.killAfter.flatMap { $0 > .zero ? $0 : nil }
        let (child, schedulesKill) = state.withLock { state -> (ChildProcess?, Bool) in
            guard let child = state.child else { return (nil, false) }
            if atLimit { state.timedOut = true }
            let schedulesKill = killAfter != nil && !state.killScheduled && signal != SIGKILL
            if schedulesKill { state.killScheduled = true }
            return (child, schedulesKill)
        }
        guard let child else { return }
        if options.verbose {
            Output.error("timerkit timeout: sending signal \(SignalName.name(of: signal)) to command '\(command[0])'")
        }
        child.send(signal)
        // A stopped command acts on the signal only once continued (GNU timeout does the same).
        if !options.foreground && signal != SIGKILL && signal != SIGCONT { child.send(SIGCONT) }
        guard schedulesKill, let killAfter,
            let kill = try? ScheduledTimer.once(
                at: .after(killAfter), clock: options.clock, delivery: .queue(queue),
                { [self] _, _ in send(SIGKILL, atLimit: false) })
        else { return }
        state.withLock { $0.timers.append(kill) }
    }
}
