import ArgumentParser

@main
struct TimerKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timerkit",
        abstract: "Timers that cannot leak, need no run loop, and keep their grid.",
        subcommands: [Demo.self],
        defaultSubcommand: Demo.self)
}
