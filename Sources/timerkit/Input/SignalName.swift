#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A signal as `timeout --signal` takes it: a name with or without `SIG` (`TERM`, `sigint`) or a
/// number from 1 to 31.
enum SignalName {
    static let names: [(String, Int32)] = [
        ("HUP", SIGHUP), ("INT", SIGINT), ("QUIT", SIGQUIT), ("KILL", SIGKILL), ("USR1", SIGUSR1), ("USR2", SIGUSR2),
        ("ALRM", SIGALRM), ("TERM", SIGTERM)
    ]

    static func parse(_ text: String) throws(UsageError) -> Int32 {
        let trimmed = String(text.trimmingWhitespace).uppercased()
        let name = trimmed.hasPrefix("SIG") ? String(trimmed.dropFirst(3)) : trimmed
        if let known = names.first(where: { $0.0 == name }) { return known.1 }
        if let number = Int32(trimmed), (1...31).contains(number) { return number }
        throw UsageError("unknown signal '\(text)': use TERM, INT, HUP, QUIT, KILL, USR1, USR2, ALRM or a number from 1 to 31")
    }
}
