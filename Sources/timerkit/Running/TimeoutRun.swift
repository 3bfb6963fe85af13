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
/// command's process group (``ChildProcess/send(_:)``): what the command started stops with it.
final class TimeoutRun: Sendable {
    private struct State {
        var child: ChildProcess?
        var timedOut = false
        var killed = false
        var signals: [ScheduledTimer] = []
    }

    private let limit: Duration
    private let signal: Int32
    private let killAfter: Duration?
    private let clock: TimerClock
    private let command: [String]
    private let state = Locked(State())
    private let queue = DispatchQueue(label: "timerkit.timeout")

    init(limit: Duration, signal: Int32, killAfter: Duration?, clock: TimerClock, command: [String]) {
        self.limit = limit
        self.signal = signal
        self.killAfter = killAfter
        self.clock = clock
        self.command = command
    }

    /// Runs the command; returns 124 if the limit came, 137 if it was killed, else its status.
    func run() throws -> Int32 {
        SignalRelay.install { [self] signal in forward(signal) }
        let child: ChildProcess
        do {
            // Started under the lock, so that a signal sees the command's process.
            child = try state.withLock { (state) throws(ChildProcess.LaunchError) -> ChildProcess in
                let child = try ChildProcess.launch(command)
                state.child = child
                return child
            }
        } catch {
            Output.error("timerkit timeout: \(error)")
            return error.exitStatus
        }
        let atLimit = try ScheduledTimer.once(at: .after(limit), clock: clock, delivery: .queue(queue)) { [self] _, _ in reachLimit() }
        state.withLock { $0.signals.append(atLimit) }
        let termination = child.wait()
        let (timedOut, killed, timers) = state.withLock { state in
            state.child = nil
            defer { state.signals = [] }
            return (state.timedOut, state.killed, state.signals)
        }
        for timer in timers { timer.invalidate() }
        guard timedOut else { return termination.status }
        return killed && termination == .signaled(SIGKILL) ? 128 + SIGKILL : 124
    }

    /// The limit came: the signal now, KILL later if asked.
    private func reachLimit() {
        let child = state.withLock { state -> ChildProcess? in
            guard let child = state.child else { return nil }
            state.timedOut = true
            return child
        }
        guard let child else { return }
        child.send(signal)
        // A stopped command acts on the signal only once continued (GNU timeout does the same).
        if signal != SIGKILL && signal != SIGCONT { child.send(SIGCONT) }
        guard let killAfter, signal != SIGKILL else {
            if signal == SIGKILL { state.withLock { $0.killed = true } }
            return
        }
        guard
            let kill = try? ScheduledTimer.once(
                at: .after(killAfter), clock: clock, delivery: .queue(queue),
                { [self] _, _ in
                    let running = state.withLock { state -> Bool in
                        guard state.child?.pid == child.pid else { return false }
                        state.killed = true
                        return true
                    }
                    if running { child.send(SIGKILL) }
                })
        else { return }
        state.withLock { $0.signals.append(kill) }
    }

    /// SIGINT, SIGTERM or SIGHUP to `timerkit`: passed on to the command, which decides.
    private func forward(_ signal: Int32) {
        state.withLock { $0.child }?.send(signal)
    }
}
