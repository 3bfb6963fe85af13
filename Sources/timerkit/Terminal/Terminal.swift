import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The terminal, when there is one: raw key input without echo, the width of a line, colour as
/// the `NO_COLOR` convention allows, and the settings put back as they were.
final class Terminal: @unchecked Sendable {
    private var saved = termios()
    private var isRaw = false
    private let lock = NSLock()

    /// Whether standard output is a terminal (else output is plain lines, no escape codes).
    static var isOutputTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Whether keys can be read from standard input.
    static var isInputTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Whether standard error is a terminal.
    static var isErrorTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Colour only on a terminal, and never when `NO_COLOR` is set to anything but the empty string.
    static var usesColor: Bool {
        guard isOutputTerminal else { return false }
        if let value = ProcessInfo.processInfo.environment["NO_COLOR"], !value.isEmpty { return false }
        return true
    }

    /// The terminal's width in columns; 80 if it cannot be read.
    static var columns: Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Keys one at a time, unechoed; Ctrl-C still raises SIGINT.
    func enterKeyMode() {
        lock.lock()
        defer { lock.unlock() }
        guard !isRaw, Self.isInputTerminal, tcgetattr(STDIN_FILENO, &saved) == 0 else { return }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        if tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 { isRaw = true }
    }

    /// Puts the settings back and shows the cursor. Safe to call more than once.
    func restore() {
        lock.lock()
        defer { lock.unlock() }
        if isRaw {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            isRaw = false
        }
        if Self.isOutputTerminal { Output.raw(Escape.showCursor) }
    }

    /// Calls `handler` with each byte typed, on a thread of its own, for as long as the process runs.
    func readKeys(_ handler: @escaping @Sendable (UInt8) -> Void) {
        guard Self.isInputTerminal else { return }
        let reader = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(STDIN_FILENO, &byte, 1)
                if count == 1 { handler(byte) } else if count < 0 && errno == EINTR { continue } else { return }
            }
        }
        reader.name = "timerkit.keys"
        reader.start()
    }

    /// The escape sequences the tool uses.
    enum Escape {
        static let clearLine = "\r\u{1B}[2K"
        static let hideCursor = "\u{1B}[?25l"
        /// The terminal bell.
        static let bell = "\u{7}"
        static let showCursor = "\u{1B}[?25h"
        static let green = "\u{1B}[32m"
        static let yellow = "\u{1B}[33m"
        static let dim = "\u{1B}[2m"
        static let reset = "\u{1B}[0m"
    }
}
