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
              timerkit every 1s --count 5 -- date     run a command on a 1 s grid, 5 times
              timerkit after 2s -- echo hi            run a command once, 2 s from now
              timerkit at 09:30 -- echo stand-up      run a command at 09:30 (wall clock)
              timerkit demo                           walk through TimerKit's promises

            Durations: 250ms, 1.5s, 90s, 2m, 1h30m, 1d, 1w, us, ns; a bare number is seconds.
            Exit status: 0 done; 64 bad input; 126 command not executable; 127 command not found;
            128+n ended by signal n (130: Ctrl-C); after, at: the command's own status.
            """,
        version: TimerKitVersion.current,
        subcommands: [CountdownCommand.self, EveryCommand.self, AfterCommand.self, AtCommand.self, Demo.self])

    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `-1s` would read as options; say what it is instead.
        if let (name, command, value) = negativeDuration(in: arguments) {
            Output.error("""
                Error: negative duration '\(value)': a duration cannot be negative
                Usage: \(command.configuration.usage ?? "timerkit \(name)")
                  See 'timerkit \(name) --help' for more information.
                """)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    /// The subcommand and the argument, when a duration argument of `countdown`, `every` or
    /// `after` (or an option's value) before `--` is a negative number.
    static func negativeDuration(in arguments: [String]) -> (String, any ParsableCommand.Type, String)? {
        let commands: [String: any ParsableCommand.Type] = ["countdown": CountdownCommand.self, "every": EveryCommand.self, "after": AfterCommand.self]
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
