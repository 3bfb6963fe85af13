#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The terminal's foreground process group, as a shell hands it to a job and takes it back.
///
/// Only standard input's terminal is considered: a command started with its input elsewhere does
/// not read the terminal through it.
enum JobControl {
    /// The terminal's foreground process group, or nil without a terminal.
    static var foregroundGroup: pid_t? {
        guard isatty(STDIN_FILENO) == 1 else { return nil }
        let group = tcgetpgrp(STDIN_FILENO)
        return group > 0 ? group : nil
    }

    /// Whether `timerkit`'s process group is the terminal's foreground group (the user is at it).
    static var isForeground: Bool { foregroundGroup == getpgrp() }

    /// Makes `group` the terminal's foreground process group; returns whether it worked.
    ///
    /// SIGTTOU is blocked on the calling thread meanwhile: a process in a background group may
    /// then set the foreground group (taking the terminal back after the command ended) instead of
    /// being stopped for trying.
    static func giveTerminal(to group: pid_t) -> Bool {
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTTOU)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        return tcsetpgrp(STDIN_FILENO, group) == 0
    }
}
