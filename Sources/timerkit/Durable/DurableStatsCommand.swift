import ArgumentParser
import TimerKitDurable

/// `timerkit durable stats`.
struct DurableStatsCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Count the namespace's timers by handler and status: what is late or stuck, recent lateness, the instances.",
        usage: """
            timerkit durable stats [--db <database>] [<options>]
            [--late-by <duration>] [--window <duration>]
            """,
        discussion: """
            A line per handler: its timers by status, its late repeating timers (their occurrence \
            came more than --late-by ago and has not succeeded), its oldest due timer, and the \
            lateness of its runs within --window (median, 99th percentile, largest); then the \
            instances that recorded themselves, alive or gone.
            """)

    @OptionGroup var store: DurableStoreOptions

    @Option(
        help: ArgumentHelp("How late a repeating timer's occurrence must be to count as late.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--late-by") })
    var lateBy: Duration = .seconds(60)

    @Option(
        help: ArgumentHelp("How far back the runs' lateness reaches.", valueName: "duration"),
        transform: { text throws(UsageError) in try DurationText.positive(text, what: "--window") })
    var window: Duration = .seconds(3600)

    func perform() async throws {
        let timers = try await store.open()
        Output.line(try await timers.stats(lateBy: lateBy, window: window).description)
    }
}
