import ArgumentParser
import Foundation
import TimerKitDurable

/// `timerkit durable history KEY`.
struct DurableHistoryCommand: DurableSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show the last runs of a timer, newest first: when, how late, how long, how it ended, where.",
        usage: "timerkit durable history [<options>] <key> [--limit <n>] [--json]",
        discussion: """
            The run history keeps the last runs of each timer for a while (Options.history: 10 \
            runs for 7 days by default), also after a one-shot has run and is gone. Exits 1 when \
            no run of the key is recorded. --json prints one JSON object per run, one per line.
            """)

    @OptionGroup var store: DurableStoreOptions

    @Argument(help: ArgumentHelp("The timer's key.", valueName: "key"))
    var key: String

    @Option(help: ArgumentHelp("The most runs shown (1 to 10000).", valueName: "n"))
    var limit = 20

    @Flag(help: "One line of JSON per run, for scripts.")
    var json = false

    func validate() throws {
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1 to 10000, got \(limit)") }
    }

    func perform() async throws {
        let timers = try await store.open()
        let runs = try await timers.history(key: key, limit: limit)
        guard !runs.isEmpty else {
            throw DurableFailure("no run of '\(key)' is recorded in namespace '\(store.namespace)'", status: DurableExit.nothingDone)
        }
        if json {
            for run in runs { Output.line(DurableFormat.jsonLine(DurableFormat.json(run))) }
            return
        }
        var table = DurableTable("STARTED", "OUTCOME", "ATTEMPT", "LATE", "TOOK", "SEQUENCE", "INSTANCE", "ERROR")
        for run in runs {
            table.append([
                DurableFormat.instant(run.started), run.outcome.rawValue, "\(run.attempt)", DurableFormat.duration(run.lateness),
                DurableFormat.duration(run.duration), "\(run.sequence)", run.instance, run.error ?? ""
            ])
        }
        for line in table.lines(width: Terminal.isOutputTerminal ? Terminal.columns : nil) { Output.line(line) }
    }
}
