import ArgumentParser
import TimerKitDurable

/// `timerkit durable plan KEY`.
struct DurablePlanCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Show a timer's next occurrences, and what its misfire policy makes of an outage.",
        usage: """
            timerkit durable plan [--db <database>] [<options>] <key>
            [--count <n>] [--outage <duration>]
            """,
        discussion: """
            Occurrences of a calendar schedule are shown in its zone, across clock changes. With \
            --outage, what happens when the runners come back that long after the next \
            occurrence: how many occurrences one run stands for, how many are skipped, what comes \
            next. Exits 1 when no timer is stored under the key.

            Example: timerkit durable plan --db timers.sqlite report/daily --count 5 --outage 26h
            """)

    @OptionGroup var store: DurableStoreOptions

    @Argument(help: ArgumentHelp("The timer's key.", valueName: "key"))
    var key: String

    @Option(help: ArgumentHelp("How many occurrences (1 to 1000).", valueName: "n"))
    var count = 10

    @Option(
        help: ArgumentHelp("An outage from the next occurrence: \(DurationText.help).", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--outage") })
    var outage: Duration?

    func validate() throws {
        guard (1...1_000).contains(count) else { throw ValidationError("--count must be 1 to 1000, got \(count)") }
    }

    func perform() async throws {
        let timers = try await store.open()
        do {
            Output.line(try await timers.plan(key: key, count: count, outage: outage).description)
        } catch DurableTimerError.notFound {
            throw DurableFailure.notStored(key, namespace: store.namespace)
        }
    }
}
