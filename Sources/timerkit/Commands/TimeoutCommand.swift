import ArgumentParser
import Foundation
import TimerKit

/// `timerkit timeout [OPTION]... DURATION COMMAND [ARG]...`, as GNU `timeout`: its options (short,
/// long, abbreviated), its durations, its exit statuses, and the command without `--`, so that a
/// script written for GNU's runs unchanged. `--` before the command, and options after the
/// duration (`timeout 30s --kill-after 5s -- cmd`), are still taken.
struct TimeoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeout",
        abstract: "Run a command, and stop it if it is still running after a time limit.",
        usage: "timerkit timeout [<options>] <duration> <command> [<argument> ...]",
        discussion: """
            As GNU timeout: options come before the command, and everything from the command \
            on is its own (timerkit timeout 5m make -j4 test); a -- before the command is \
            allowed. At the limit the command gets the signal (TERM by default); with \
            --kill-after it is killed (KILL) if it is still running that long after. A \
            duration of 0 disables that timeout. The limit is counted on the continuous clock \
            by default. Ctrl-C, TERM and HUP are passed on to the command.

            Exit status, as GNU timeout: 124 if the limit came (with --preserve-status, the \
            command's status: 128+n if signal n ended it), 137 if the command had to be \
            killed; otherwise the command's own status (126: not executable, 127: not found).

            Example: timerkit timeout -k 5s 30s curl -s https://example.com
            """)

    @Argument(
        help: ArgumentHelp("The limit: \(DurationText.help); 0: no limit.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.duration(text) })
    var limit: Duration

    @Option(
        name: .shortAndLong,
        help: ArgumentHelp(
            "The signal sent at the limit: a name (TERM, INT, HUP, KILL, USR1…, with or without SIG) or a number.", valueName: "signal"),
        transform: { text throws(UsageError) in try SignalName.parse(text) })
    var signal: Int32 = SIGTERM

    @Option(
        name: .shortAndLong,
        help: ArgumentHelp("Also send KILL if the command is still running this long after the first signal (0: never).", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.duration(text) })
    var killAfter: Duration?

    @Flag(help: "Exit with the command's status even when the limit came (128+n if signal n ended it), not 124.")
    var preserveStatus = false

    @Flag(
        help: """
            Keep the command in timerkit's process group and leave the terminal alone: run from \
            a script, it can read the terminal and gets Ctrl-C. Only the command is signalled, \
            not what it started.
            """)
    var foreground = false

    @Flag(name: .shortAndLong, help: "Say on stderr each signal sent to the command.")
    var verbose = false

    @Option(help: "The clock: continuous keeps counting while the machine sleeps, suspending does not.")
    var clock: ClockChoice = .continuous

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command to run, and its arguments.", valueName: "command"))
    var command: [String] = []

    func validate() throws {
        if command.isEmpty { throw ValidationError("missing command after the limit, as in: timerkit timeout 10s make test") }
    }

    func run() throws {
        let options = TimeoutRun.Options(
            limit: limit, signal: signal, killAfter: killAfter, preserveStatus: preserveStatus, foreground: foreground, verbose: verbose,
            clock: clock.clock)
        let status = TimeoutRun(options, command: command).run()
        if status != 0 { throw ExitCode(status) }
    }
}

extension TimeoutCommand {
    /// Long options that take a value, and those that do not.
    static let valuedOptions: Set<String> = ["--signal", "--kill-after", "--clock"]
    static let longOptions = ["--signal", "--kill-after", "--clock", "--foreground", "--preserve-status", "--verbose", "--help"]

    /// GNU `timeout`'s command line (the arguments after `timeout`) in the form ArgumentParser
    /// reads: a `--` inserted before the command, so that the command's own options stay its own
    /// (`5 make -j4`); short options apart (`-sKILL`, `-k5`, `-vs INT`: `-s KILL`, `-k 5`, `-v -s
    /// INT`); long ones in full where GNU takes an abbreviation (`--sig=INT`, `--pres`).
    ///
    /// The first word that is neither an option nor an option's value is the duration, the next
    /// one the command; from there on nothing is touched. A `--` before the command is kept (a `--`
    /// before the duration ends the options, as for GNU).
    static func normalized(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var rest = arguments[...]
        var sawLimit = false
        while let argument = rest.popFirst() {
            if argument == "--" {
                if !sawLimit, let limit = rest.popFirst() { result.append(limit) }
                return result + ["--"] + rest
            }
            if argument.hasPrefix("--") {
                let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = longName(String(parts[0]))
                if parts.count == 2 {
                    result.append(name + "=" + parts[1])
                } else {
                    result.append(name)
                    if valuedOptions.contains(name), let value = rest.popFirst() { result.append(value) }
                }
                continue
            }
            // -v, -s SIG, -sSIG, -vk5: a cluster of short options. Anything else that starts with a
            // dash (-1s, -µs) is left for the checks that name it.
            if argument.count > 1, argument.hasPrefix("-"), let first = argument.dropFirst().first, first.isASCII, first.isLetter {
                var letters = argument.dropFirst()
                while let letter = letters.popFirst() {
                    result.append("-\(letter)")
                    guard letter == "s" || letter == "k" else { continue }
                    if !letters.isEmpty {
                        result.append(String(letters))
                    } else if let value = rest.popFirst() {
                        result.append(value)
                    }
                    break
                }
                continue
            }
            if !sawLimit {
                result.append(argument)
                sawLimit = true
                continue
            }
            return result + ["--", argument] + rest
        }
        return result
    }

    /// `name` in full if it is one of the long options or an abbreviation of only one (GNU's
    /// `getopt_long`); else as it is, for ArgumentParser to refuse.
    static func longName(_ name: String) -> String {
        if longOptions.contains(name) { return name }
        let candidates = longOptions.filter { $0.hasPrefix(name) }
        return candidates.count == 1 && name.count > 2 ? candidates[0] : name
    }
}
