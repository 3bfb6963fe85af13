#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A signal as `timeout --signal` takes it, as GNU `timeout` does: a name with or without `SIG`,
/// in any case (`TERM`, `sigint`, `Kill`), or a number (`9`; 0 sends nothing, as `kill -0`).
enum SignalName {
    /// The names `kill -l` lists on this system (the first name of a number is the one printed).
    static let names: [(String, Int32)] = {
        var names: [(String, Int32)] = [
            ("HUP", SIGHUP), ("INT", SIGINT), ("QUIT", SIGQUIT), ("ILL", SIGILL), ("TRAP", SIGTRAP), ("ABRT", SIGABRT),
            ("IOT", SIGABRT), ("BUS", SIGBUS), ("FPE", SIGFPE), ("KILL", SIGKILL), ("USR1", SIGUSR1), ("SEGV", SIGSEGV),
            ("USR2", SIGUSR2), ("PIPE", SIGPIPE), ("ALRM", SIGALRM), ("TERM", SIGTERM), ("CHLD", SIGCHLD), ("CONT", SIGCONT),
            ("STOP", SIGSTOP), ("TSTP", SIGTSTP), ("TTIN", SIGTTIN), ("TTOU", SIGTTOU), ("URG", SIGURG), ("XCPU", SIGXCPU),
            ("XFSZ", SIGXFSZ), ("VTALRM", SIGVTALRM), ("PROF", SIGPROF), ("WINCH", SIGWINCH), ("IO", SIGIO), ("SYS", SIGSYS)
        ]
        #if os(Linux)
        names += [("CLD", SIGCHLD), ("POLL", SIGIO), ("STKFLT", 16), ("PWR", 30)]
        #else
        names += [("EMT", 7), ("INFO", 29)]
        #endif
        return names
    }()

    /// The largest signal number taken: Linux's real-time signals go up to 64.
    #if os(Linux)
    static let largest: Int32 = 64
    #else
    static let largest: Int32 = 31
    #endif

    static func parse(_ text: String) throws(UsageError) -> Int32 {
        let trimmed = String(text.trimmingWhitespace).uppercased()
        let name = trimmed.hasPrefix("SIG") ? String(trimmed.dropFirst(3)) : trimmed
        if let known = names.first(where: { $0.0 == name }) { return known.1 }
        if let number = Int32(trimmed), (0...largest).contains(number) { return number }
        throw UsageError("unknown signal '\(text)': use a name such as TERM, INT, HUP, KILL or USR1, or a number from 0 to \(largest)")
    }

    /// The signal's name without `SIG` (`TERM`), or its number if it has none, as GNU prints it.
    static func name(of signal: Int32) -> String {
        names.first(where: { $0.1 == signal })?.0 ?? String(signal)
    }
}
