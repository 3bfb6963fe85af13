import ArgumentParser
import TimerKitDurable

/// `timerkit durable why KEY`.
struct DurableWhyCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "why",
        abstract: "Explain why a timer has not fired: not due yet, retrying, paused, parked, running, orphaned, no instance alive.",
        usage: "timerkit durable why [--db <database>] [--namespace <name>] <key>",
        discussion: """
            The findings, the answer first, on the store's time; then the last recorded run. \
            Exits 1 when no timer is stored under the key (its last run is still shown: a \
            one-shot that ran is gone).

            Example: timerkit durable why --db timers.sqlite sale/42
            """)

    @OptionGroup var store: DurableStoreOptions

    @Argument(help: ArgumentHelp("The timer's key.", valueName: "key"))
    var key: String

    func perform() async throws {
        let timers = try await store.open()
        let diagnosis = try await timers.why(key: key)
        Output.line(diagnosis.description)
        if diagnosis.timer == nil { throw ExitCode(DurableExit.nothingDone) }
    }
}
