import Dispatch
import Foundation
import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `timerkit countdown`: the library's ``Countdown`` (remaining time is always deadline − now, so
/// it cannot drift; the shown value changes exactly when a second of it passes), drawn on the
/// terminal or printed a line per tick.
final class CountdownRun: Sendable {
    private let start: TimerStart
    private let clock: TimerClock
    private let line: CountdownLine
    private let session = LiveSession(label: "timerkit.countdown")
    private var interactive: Bool { session.interactive }
    private var queue: DispatchQueue { session.queue }
    private let countdown = Locked<Countdown?>(nil)
    /// The whole length, for the progress bar.
    private let total: Duration

    /// Whether the terminal bell rings at zero (only on a terminal).
    private let bell: Bool
    /// The command run at zero (given after `--`), if any, and its process while it runs.
    private let then: [String]
    private let child = Locked<ChildProcess?>(nil)

    init(to start: TimerStart, clock: TimerClock, label: String?, bell: Bool = true, then: [String] = []) {
        self.bell = bell
        self.then = then
        self.start = start
        self.clock = clock
        line = CountdownLine(label: label, color: Terminal.usesColor)
        switch start {
        case .after(let delay): total = delay
        case .date(let date): total = .nanoseconds(Int64((date.timeIntervalSinceNow * 1e9).rounded()))
        case .now, .at: total = .zero
        }
    }

    /// Counts down; returns 0 at zero (or the status of the command run then), 128 + the signal's
    /// number on a signal, 130 on `q`.
    func run() throws -> Int32 {
        SignalRelay.install(catchingSuspension: interactive) { [self] signal in
            // After zero, the command run then has the signal (it has the terminal, if any).
            if let child = child.withLock({ $0 }) {
                return signal == SIGTSTP
                    ? SignalRelay.stopSelf()
                    : child.forward(signal, repeated: false) { [self] in
                        self.child.withLock { $0?.pid == child.pid }
                    }
            }
            if signal == SIGTSTP { suspend() } else { session.end(128 + signal) }
        }
        session.begin()
        let made = try Countdown.start(to: start, clock: clock, delivery: .queue(queue)) { [self] countdown, tick in
            show(tick, paused: countdown.isPaused)
            if tick.isFinished { session.end(0) }
        }
        countdown.withLock { $0 = made }
        // Keys typed before this wait in the terminal's buffer; read from now on, they find the
        // countdown.
        session.readKeys { [self] key in self.key(key) }
        let status = session.waitForEnd { made.cancel() }
        guard status == 0, !then.isEmpty else { return status }
        return runCommand()
    }

    /// At zero: runs the command given after `--` and returns its status (127 or 126 if it cannot start).
    private func runCommand() -> Int32 {
        let launched = child.withLock { child -> Result<ChildProcess, ChildProcess.LaunchError> in
            let result = Result { () throws(ChildProcess.LaunchError) in try ChildProcess.launch(then) }
            if case .success(let started) = result { child = started }
            return result
        }
        switch launched {
        case .failure(let error):
            Output.error("timerkit countdown: \(error)")
            return error.exitStatus
        case .success(let started):
            let status = started.wait().status
            child.withLock { $0 = nil }
            return status
        }
    }

    private func show(_ tick: Countdown.Tick, paused: Bool) {
        guard !session.hasEnded || tick.isFinished else { return }
        if interactive {
            Output.raw(line.terminal(tick, total: total, paused: paused, columns: Terminal.columns))
            if tick.isFinished && bell { Output.raw(Terminal.Escape.bell) }
        } else {
            Output.line(line.plain(tick))
        }
    }

    /// `p` or space pauses and resumes; `q` quits.
    private func key(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "p"), UInt8(ascii: "P"), UInt8(ascii: " "):
            guard let countdown = countdown.withLock({ $0 }), !countdown.isFinished else { return }
            if countdown.isPaused { countdown.resume() } else { countdown.pause() }
            // Redraw at once with the new state; the value is the countdown's own.
            queue.async { [self] in
                let tick = countdown.currentTick
                show(tick, paused: countdown.isPaused)
            }
        case UInt8(ascii: "q"), UInt8(ascii: "Q"):
            session.end(130)
        default:
            break
        }
    }

    /// Ctrl-Z: the terminal goes back to the shell; on `fg` the line is redrawn. The countdown
    /// keeps counting meanwhile: its deadline does not move (use `p` to pause).
    private func suspend() {
        session.suspend { [self] in
            guard let countdown = countdown.withLock({ $0 }) else { return }
            show(countdown.currentTick, paused: countdown.isPaused)
        }
    }
}
