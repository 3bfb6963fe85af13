import Dispatch
import TimerKit

/// What the live commands on a terminal (`countdown`, `stopwatch`) share: a serial queue that
/// draws, key mode while they run, an ending that the first of `q`, a signal or the end itself
/// sets, and Ctrl-Z that gives the shell its terminal back as it was and takes it again on `fg`.
final class LiveSession: Sendable {
    /// Where the line is drawn: one thing at a time.
    let queue: DispatchQueue
    /// Whether standard output is a terminal (else plain lines, no keys, no escape codes).
    let interactive = Terminal.isOutputTerminal
    private let terminal = Terminal()
    /// The exit status, set once by whoever ends the session first.
    private let ending = Locked<Int32?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Whether the session has ended (its status is set).
    var hasEnded: Bool { ending.withLock { $0 != nil } }

    /// Keys one at a time and the cursor hidden, on a terminal: before the first draw.
    func begin() {
        if interactive { enterKeyMode() }
    }

    /// From now on `key` gets each key typed (keys typed before wait in the terminal's buffer).
    func readKeys(_ key: @escaping @Sendable (UInt8) -> Void) {
        if interactive { terminal.readKeys(key) }
    }

    /// Blocks until the session ends, calls `whenEnded` (stop what draws), lets whatever is being
    /// drawn finish, and puts the terminal back (after a line of its own); returns the status.
    func waitForEnd(clearingLine: Bool = false, whenEnded: () -> Void) -> Int32 {
        finished.wait()
        whenEnded()
        // Whatever was being drawn has been drawn: the queue is serial.
        queue.sync {}
        if interactive {
            Output.raw(clearingLine ? Terminal.Escape.clearLine : "\n")
            terminal.restore()
        }
        return ending.withLock { $0 } ?? 0
    }

    /// Ends the session with `status`, unless it has ended already.
    func end(_ status: Int32) {
        let first = ending.withLock { ending -> Bool in
            guard ending == nil else { return false }
            ending = status
            return true
        }
        if first { finished.signal() }
    }

    /// Ctrl-Z: the terminal back as it was (echo, line mode, the cursor), stop; on `fg`, key mode
    /// again and `redraw`. After the end (the terminal is being restored), only the stop.
    func suspend(redraw: @escaping @Sendable () -> Void) {
        guard !hasEnded else { return SignalRelay.stopSelf() }
        queue.sync {
            Output.raw("\n")
            terminal.restore()
        }
        SignalRelay.stopSelf()
        queue.async { [self] in
            enterKeyMode()
            redraw()
        }
    }

    private func enterKeyMode() {
        terminal.enterKeyMode()
        Output.raw(Terminal.Escape.hideCursor)
    }
}
