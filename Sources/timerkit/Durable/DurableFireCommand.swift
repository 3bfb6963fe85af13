import ArgumentParser
import TimerKitDurable

/// `timerkit durable fire KEY…`: each timer's next occurrence runs now.
struct DurableFireCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "fire",
        abstract: "Run timers' next occurrences now, on whichever instance claims them first.",
        usage: "timerkit durable fire [<options>] <key> ...",
        discussion: """
            The timer becomes due at once, its occurrence unchanged: the run stands for that \
            occurrence, ahead of its time; a one-shot then ends, a repeating timer waits for the \
            occurrence after it (its grid kept). A retrying timer is retried now. An instance \
            running its handler claims it: on PostgreSQL at once, on SQLite at an instance's next \
            load (within half its horizon). Exits 1 when a key is not stored, or is parked \
            (retry it), paused (resume it), running, or due already; the others are still fired.

            Example: timerkit durable fire --db timers.sqlite report/daily
            """)

    @OptionGroup var store: DurableStoreOptions

    @Argument(help: "The keys of the timers.")
    var keys: [String]

    func validate() throws {
        guard !keys.isEmpty else { throw ValidationError("give the keys of the timers to fire") }
    }

    func perform() async throws {
        let timers = try await store.open()
        var failed = false
        for key in keys {
            if try await timers.runNow(key: key) {
                Output.line("fired \(key): due now")
            } else {
                failed = true
                Output.error(
                    "timerkit durable fire: '\(key)' in namespace '\(store.namespace)' is not stored, or is parked, paused, running or due already (see: timerkit durable why \(key))"
                )
            }
        }
        if failed { throw ExitCode(DurableExit.nothingDone) }
    }
}
