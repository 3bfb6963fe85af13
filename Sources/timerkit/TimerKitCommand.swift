import ArgumentParser
import Foundation

@main
struct TimerKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timerkit",
        abstract: "Timers that keep their grid: countdowns, repeated and delayed commands, and a demo of TimerKit.",
        discussion: """
            Examples:
              timerkit countdown 25m --label Tea     a live countdown (p pauses, q quits)
              timerkit stopwatch                      count up, with laps (l) and pause (p)
              timerkit every 1s --count 5 -- date     run a command on a 1 s grid, 5 times
              timerkit every --on "mon..fri 09:00" -- notify-send Stand-up
                                                      run a command on the calendar
              timerkit after 1m 30s -- echo hi        run a command once, 90 s from now
              timerkit at 9:30am -- echo stand-up     run a command at 09:30 (wall clock)
              timerkit timeout 10s make test          stop a command after 10 s (exit 124)
              timerkit demo                           walk through TimerKit's promises
              timerkit durable ls --db timers.sqlite  list durable timers (durable --help)

            Durations: 250ms, 1.5s, 90s, 2m, 1h30m, 1d, 1w, us, ns; a bare number is
            seconds; at most 100 years.

            Exit status:
              0        done
              64       bad input
              124      timeout: the limit came (137: the command had to be killed)
              126      the command is not executable
              127      the command is not found
              128+n    ended by signal n (130: Ctrl-C)
              after, at, timeout, countdown -- cmd: otherwise the command's own status
              every --fail-fast: the failing run's status (124: it hit --timeout)
              durable: 1 not found or nothing done, 69 the database cannot be used
            """,
        version: TimerKitVersion.current,
        subcommands: [
            CountdownCommand.self, StopwatchCommand.self, EveryCommand.self, AfterCommand.self, AtCommand.self, TimeoutCommand.self, Demo.self,
            DurableCommand.self
        ])

    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        // GNU timeout's command line: the command needs no `--` (the checks below stop at one).
        if arguments.first == "timeout" { arguments = ["timeout"] + TimeoutCommand.normalized(Array(arguments.dropFirst())) }
        // `-1s` would read as options; say what it is instead.
        if let (name, command, value) = negativeDuration(in: arguments) {
            Output.error(
                """
                Error: negative duration '\(value)': a duration cannot be negative
                Usage: \(aligned(command.configuration.usage ?? "timerkit \(name)"))
                  See 'timerkit \(name) --help' for more information.
                """)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        // `-µs&.879hr` would read as a cluster of short flags, one of them -h (help, exit 0).
        if let (name, value) = unknownDashArgument(in: arguments) {
            let usage = name.flatMap { subcommandUsage[$0] } ?? "timerkit <subcommand>"
            Output.error(
                """
                Error: unknown option '\(value)'
                Usage: \(aligned(usage))
                  See 'timerkit\(name.map { " \($0)" } ?? "") --help' for more information.
                """)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot(joiningWords(arguments))
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// A usage of several lines with its later lines under the first, after "Usage: ".
    static func aligned(_ usage: String) -> String {
        usage.replacingOccurrences(of: "\n", with: "\n       ")
    }

    /// Subcommands whose one positional argument may be typed as several words, and their options
    /// that take a value.
    static let multiWordArgument: [String: Set<String>] = [
        "after": ["--clock"], "at": [], "countdown": ["--label"]
    ]

    /// `after 1m 30s -- …`, `at tomorrow 9am -- …`, `countdown 1m 30s`: the words before `--` that
    /// are neither options nor their values become one argument, at the place of the first, so
    /// that ArgumentParser (which allows no second positional list before the command) sees one.
    static func joiningWords(_ arguments: [String]) -> [String] {
        guard let name = arguments.first, let valued = multiWordArgument[name] else { return arguments }
        var result = [name]
        var words: [String] = []
        var wordsAt: Int?
        var rest = arguments.dropFirst()
        while let argument = rest.first {
            if argument == "--" { break }
            rest = rest.dropFirst()
            if argument.hasPrefix("-") {
                result.append(argument)
                // An option's value is its own argument, unless given as --name=value.
                if valued.contains(argument), let value = rest.first {
                    result.append(value)
                    rest = rest.dropFirst()
                }
                continue
            }
            if wordsAt == nil { wordsAt = result.count }
            words.append(argument)
        }
        if let wordsAt { result.insert(words.joined(separator: " "), at: wordsAt) }
        return result + rest
    }

    static let subcommandUsage: [String: String] = Dictionary(
        uniqueKeysWithValues: ([
            CountdownCommand.self, StopwatchCommand.self, EveryCommand.self, AfterCommand.self, AtCommand.self, TimeoutCommand.self, Demo.self,
            DurableCommand.self
        ] as [any ParsableCommand.Type]).compactMap { command in
            command.configuration.commandName.map { ($0, command.configuration.usage ?? "timerkit \($0)") }
        })

    /// The subcommand (if any) and the argument, when an argument before `--` starts with one dash
    /// followed by neither a letter nor a digit (`-µs`, `-&`): no option looks like that, and
    /// ArgumentParser would read letters further in as short flags.
    static func unknownDashArgument(in arguments: [String]) -> (String?, String)? {
        let name = arguments.first.flatMap { subcommandUsage[$0] != nil ? $0 : nil }
        for argument in arguments.dropFirst(name == nil ? 0 : 1) {
            if argument == "--" { break }
            guard argument.count > 1, argument.first == "-", let second = argument.dropFirst().first else { continue }
            if second == "-" || (second.isASCII && (second.isLetter || second.isNumber)) || second == "." { continue }
            return (name, argument)
        }
        return nil
    }

    /// The subcommand and the argument, when a duration argument of `countdown`, `every` or
    /// `after` (or an option's value) before `--` is a negative number.
    static func negativeDuration(in arguments: [String]) -> (String, any ParsableCommand.Type, String)? {
        let commands: [String: any ParsableCommand.Type] = [
            "countdown": CountdownCommand.self, "every": EveryCommand.self, "after": AfterCommand.self, "timeout": TimeoutCommand.self
        ]
        guard let name = arguments.first, let command = commands[name] else { return nil }
        for argument in arguments.dropFirst() {
            if argument == "--" { break }
            if argument.count > 1, argument.first == "-", let second = argument.dropFirst().first, second.isNumber || second == "." {
                return (name, command, argument)
            }
        }
        return nil
    }
}

/// The tool's version, as `timerkit --version` prints it.
enum TimerKitVersion {
    static let current = "0.1.0"
}
