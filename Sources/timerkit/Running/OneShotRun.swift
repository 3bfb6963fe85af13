import Dispatch
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `timerkit after` and `timerkit at`: waits for one deadline on a clock, then runs a command and
/// takes its exit status. A signal while waiting ends the wait (128 + the signal's number, the
/// command never runs); a signal while the command runs is passed on to it, and it is killed if it
/// is still running after the grace period.
final class OneShotRun: Sendable {
    private struct State {
        var child: ChildProcess?
        var signal: Int32?
        var timer: ScheduledTimer?
    }

    private let start: TimerStart
    private let clock: TimerClock
    private let command: [String]
    private let name: String
    private let state = Locked(State())
    private let finished = DispatchSemaphore(value: 0)
    private let outcome = Locked<Int32>(0)

    init(name: String, at start: TimerStart, clock: TimerClock, command: [String]) {
        self.name = name
        self.start = start
        self.clock = clock
        self.command = command
    }

    /// Waits, runs the command, and returns the exit status.
    func run() throws -> Int32 {
        SignalRelay.install { [self] signal in interrupt(signal) }
        let timer = try ScheduledTimer.once(at: start, clock: clock, delivery: .queue(DispatchQueue(label: "timerkit.\(name)"))) { [self] _, _ in
            launch()
            finished.signal()
        }
        state.withLock { $0.timer = timer }
        finished.wait()
        return outcome.withLock { $0 }
    }

    private func launch() {
        // Started under the lock, so that a signal sees either no command (and this will not start
        // one) or the command's process.
        let launched = state.withLock { state -> Result<ChildProcess, ChildProcess.LaunchError>? in
            guard state.signal == nil else { return nil }
            let result = Result { () throws(ChildProcess.LaunchError) in try ChildProcess.launch(command) }
            if case .success(let child) = result { state.child = child }
            return result
        }
        switch launched {
        case nil: return
        case .failure(let error):
            Output.error("timerkit \(name): \(error)")
            outcome.withLock { $0 = error.exitStatus }
        case .success(let child):
            let status = child.wait().status
            state.withLock { $0.child = nil }
            outcome.withLock { $0 = status }
        }
    }

    private func interrupt(_ signal: Int32) {
        let (timer, child, again) = state.withLock { state -> (ScheduledTimer?, ChildProcess?, Bool) in
            let again = state.signal != nil
            state.signal = state.signal ?? signal
            defer { state.timer = nil }
            return (state.timer, state.child, again)
        }
        if let child {
            return child.forward(signal, repeated: again) { [self] in state.withLock { $0.child?.pid == child.pid } }
        }
        // Still waiting (or finished): the command will not start now.
        guard !again else { return }
        timer?.invalidate()
        outcome.withLock { $0 = 128 + signal }
        finished.signal()
    }
}
